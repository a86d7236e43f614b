// Referrals on the dashboard over real HTTP (issue 21 item 1): recording one by hand with the
// API's rules and errors (checked through the JSON API), and the list's search and filters.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { issueToken } from '../../src/modules/tokens/token.service.ts';
import { apiClient, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { BrowserSession, uniqueEmail } from '../helpers/browser-session.ts';

let t: TestServer;
let merchant: BrowserSession;
let program: { id: string; base: string };
let api: ApiClient;
let jane: { id: string; email: string };

before(async () => {
  t = await startTestServer({ worker: false });
  merchant = await BrowserSession.signUp(t.url);
  program = await merchant.createProgram({ name: 'Acme', commissionRate: '20' });
  const { token } = await issueToken(t.server.database.db, { programId: program.id, name: 'site', kind: 'api_key' });
  api = apiClient(t.url, token, program.id);
  jane = (await api.post('/affiliates', { firstName: 'Jane', lastName: 'Cooper', email: uniqueEmail('jane'), affiliateLink: 'jane-c' })).body;
});
after(() => t.close());

const newReferral = (fields: Record<string, string>) => merchant.submit(`${program.base}/referrals/new`, `${program.base}/referrals/new`, fields);

describe('recording a referral by hand', () => {
  it('records it as POST /referrals does, credited to the affiliate named by link', async () => {
    const email = uniqueEmail('sam');
    const done = await newReferral({ name: 'Sam Lee', email, referredUserExternalId: 'cus_hand_1', affiliate: 'jane-c', promoCode: '', plan: 'pro' });
    assert.equal(done.status, 303, done.text.slice(0, 400));
    const [referral] = (await api.get('/referrals?externalId=cus_hand_1')).body;
    assert.equal(referral.affiliateId, jane.id);
    assert.equal(referral.email, email);
    assert.equal(referral.plan, 'pro');
    assert.match(await merchant.page(done.location!), /Referral recorded\./);
  });

  it("takes the affiliate's e-mail (any case), id or link in one field, crediting the very link typed", async () => {
    const second = (await api.post('/links', { affiliateId: jane.id, link: 'jane-promo' })).body;
    const referralsOf = async (link: string) => (await api.get(`/links?link=${link}`)).body.referrals as number;
    const [primaryBefore, secondBefore] = [await referralsOf('jane-c'), await referralsOf(second.link)];
    const cases: [string, string][] = [
      ['by-email', jane.email.toUpperCase()],
      ['by-id', jane.id.toUpperCase()],
      ['by-link', 'JANE-PROMO'],
    ];
    for (const [id, affiliate] of cases) {
      const done = await newReferral({ name: 'Named', email: uniqueEmail(id), referredUserExternalId: `cus_${id}`, affiliate, promoCode: '' });
      assert.equal(done.status, 303, `${affiliate}: ${done.text.slice(0, 400)}`);
      assert.equal((await api.get(`/referrals?externalId=cus_${id}`)).body[0].affiliateId, jane.id, affiliate);
    }
    assert.equal(await referralsOf('jane-c'), primaryBefore + 2, 'e-mail and id credit the primary link');
    assert.equal(await referralsOf(second.link), secondBefore + 1, 'a link typed is the link credited');
  });

  it('offers the newest 50 active affiliates as suggestions, and finds any other by name as one types', async () => {
    const owner = await BrowserSession.signUp(t.url);
    const crowd = await owner.createProgram({ name: 'Crowded' });
    const { token } = await issueToken(t.server.database.db, { programId: crowd.id, name: 'site', kind: 'api_key' });
    const crowdApi = apiClient(t.url, token, crowd.id);
    for (let i = 1; i <= 60; i++) {
      const res = await crowdApi.post('/affiliates', { firstName: `Member${i}`, lastName: i === 3 ? 'Quillfeather' : 'Crowd', email: `member${i}-${crowd.id.slice(0, 8)}@example.com`, ...(i === 60 ? { status: 'inactive' } : {}) });
      assert.equal(res.status, 201);
    }
    const page = await owner.page(`${crowd.base}/referrals/new`);
    assert.match(page, /<label for="f-affiliate">Affiliate<\/label>/);
    assert.match(page, /<input id="f-affiliate" name="affiliate" type="text" value=""[^>]*aria-describedby="f-affiliate-help"[^>]*list="affiliate-choices" autocomplete="off"/);
    const options = [...(/<datalist id="affiliate-choices">([\s\S]*?)<\/datalist>/.exec(page)?.[1] ?? '').matchAll(/<option value="([^"]+)">([^<]+)<\/option>/g)];
    assert.equal(options.length, 50, 'bounded: 50 of 59 active');
    assert.match(options[0]![2]!, /^Member59 Crowd · member59-/, 'newest first; the inactive one is not offered');
    assert.ok(!options.some((o) => /^Member[1-9] /.test(o[2]!)), 'the oldest nine are not in the page');
    // dashboard.js asks for the affiliates matching what is typed: the oldest are found too.
    const found = await owner.get(`${crowd.base}/affiliates/choices?q=quillf`);
    assert.equal(found.status, 200);
    const [only, ...rest] = JSON.parse(found.text) as { value: string; label: string }[];
    assert.deepEqual([only!.value, rest.length], [`member3-${crowd.id.slice(0, 8)}@example.com`, 0]);
    assert.match(only!.label, /^Member3 Quillfeather · member3-[^ ]+ · [A-Za-z0-9-]+$/, 'name, e-mail and link');
    assert.equal(JSON.parse((await owner.get(`${crowd.base}/affiliates/choices?q=member`)).text).length, 50, 'bounded');
    assert.equal((await merchant.get(`${crowd.base}/affiliates/choices?q=member`)).status, 404, "another user's program");
  });

  it('a name offers the affiliates matching it to choose from (without script); the choice records the referral', async () => {
    const janet = (await api.post('/affiliates', { firstName: 'Janet', lastName: 'Bloom', email: uniqueEmail('janet'), affiliateLink: 'janet-b' })).body;
    await api.post('/affiliates', { firstName: 'Jane', lastName: 'Gone', email: uniqueEmail('gone'), status: 'inactive' });
    const fields = { name: 'Picked', email: uniqueEmail('picked'), referredUserExternalId: 'cus_picked', affiliate: 'jane', promoCode: '' };
    const asked = await newReferral(fields);
    assert.equal(asked.status, 422);
    assert.match(asked.text, /id="f-affiliate-error">“jane” is not an affiliate’s e-mail, link or id\. 2 active affiliates match it: choose below\.</);
    assert.match(asked.text, /<input id="f-affiliate"[^>]*value="jane"[^>]*aria-invalid="true"/);
    const select = /<label for="f-affiliatePick">Affiliates matching “jane”<\/label>\s*<select id="f-affiliatePick" name="affiliatePick"[^>]*>([\s\S]*?)<\/select>/.exec(asked.text);
    assert.ok(select, 'a labelled list to choose from');
    const choices = [...select[1]!.matchAll(/<option value="([^"]*)">([^<]+)<\/option>/g)].map((m) => [m[1], m[2]!.split(' · ')[0]]);
    assert.deepEqual(choices, [['', 'Choose one…'], [janet.id, 'Janet Bloom'], [jane.id, 'Jane Cooper']], 'active ones, newest first; not the inactive Jane');
    assert.match(asked.text, /<input type="hidden" name="affiliateSearched" value="jane">/);
    assert.equal((await api.get('/referrals?externalId=cus_picked')).body.length, 0, 'nothing recorded');

    // Sent again without a choice: asked again. With one: recorded for the one chosen.
    assert.equal((await newReferral({ ...fields, affiliatePick: '', affiliateSearched: 'jane' })).status, 422);
    const done = await newReferral({ ...fields, affiliatePick: janet.id, affiliateSearched: 'jane' });
    assert.equal(done.status, 303, done.text.slice(0, 400));
    assert.equal((await api.get('/referrals?externalId=cus_picked')).body[0].affiliateId, janet.id);
    // A choice left over while the text changed: the text decides.
    const changed = await newReferral({ ...fields, email: uniqueEmail('changed'), referredUserExternalId: 'cus_changed', affiliate: 'jane-c', affiliatePick: janet.id, affiliateSearched: 'jane' });
    assert.equal(changed.status, 303);
    assert.equal((await api.get('/referrals?externalId=cus_changed')).body[0].affiliateId, jane.id);

    const nobody = await newReferral({ ...fields, email: uniqueEmail('nobody'), referredUserExternalId: 'cus_nobody', affiliate: 'Zebulon' });
    assert.equal(nobody.status, 422);
    assert.match(nobody.text, /id="f-affiliate-error">No affiliate of this program has the e-mail, link or id “Zebulon”, and no active affiliate’s name contains it\.</);
    assert.doesNotMatch(nobody.text, /f-affiliatePick/);
  });

  it('refuses what the API refuses, at the field, and records nothing', async () => {
    const before = (await api.get('/referrals')).body.length;
    const missing = await newReferral({ name: 'No One', email: uniqueEmail('n'), referredUserExternalId: 'cus_hand_2', affiliate: '', promoCode: '' });
    assert.equal(missing.status, 422);
    assert.match(missing.text, /id="f-affiliate-error">Name the affiliate, or give a promotional code below\./);
    const badEmail = await newReferral({ name: 'Bad', email: 'nope', referredUserExternalId: 'cus_hand_3', affiliate: 'jane-c' });
    assert.equal(badEmail.status, 422);
    assert.match(badEmail.text, /<input id="f-email"[^>]*aria-invalid="true"/);
    // Every field's error at once: the schema's and the affiliate's.
    const both = await newReferral({ name: '', email: uniqueEmail('both'), referredUserExternalId: 'cus_hand_4', affiliate: 'nobody@example.com' });
    assert.equal(both.status, 422);
    assert.match(both.text, /id="f-name-error">/);
    assert.match(both.text, /id="f-affiliate-error">No affiliate of this program has the e-mail, link or id “nobody@example\.com”\./);
    const twice = await newReferral({ name: 'Sam Again', email: uniqueEmail('again'), referredUserExternalId: 'cus_hand_1', affiliate: 'jane-c' });
    assert.equal(twice.status, 409);
    assert.match(twice.text, /id="f-referredUserExternalId-error">A referral with referredUserExternalId &quot;cus_hand_1&quot; already exists in this program\./);
    const inactive = (await api.post('/affiliates', { firstName: 'Ina', lastName: 'Ctive', email: uniqueEmail('ina'), status: 'inactive' })).body;
    const refused = await newReferral({ name: 'Late', email: uniqueEmail('late'), referredUserExternalId: 'cus_hand_5', affiliate: inactive.email });
    assert.equal(refused.status, 422);
    assert.match(refused.text, /id="f-affiliate-error">The affiliate Ina Ctive \([0-9a-f-]+\) is inactive and cannot be credited\./);
    // Another program's affiliate is nobody here.
    const other = await BrowserSession.signUp(t.url);
    const theirs = await other.createProgram({ name: 'Theirs' });
    const strange = await other.submit(`${theirs.base}/referrals/new`, `${theirs.base}/referrals/new`, { name: 'X', email: uniqueEmail('x'), referredUserExternalId: 'cus_x', affiliate: jane.email });
    assert.equal(strange.status, 422);
    assert.match(strange.text, /id="f-affiliate-error">No affiliate of this program has the e-mail, link or id/);
    assert.equal((await api.get('/referrals')).body.length, before);
  });
});

describe('the referrals list', () => {
  it('searches inside names and e-mails, filters by status and affiliate, and counts what matches', async () => {
    for (const [name, status] of [['Ada Byron', 'active'], ['Bob Adams', 'inactive'], ['Cy Young', 'active']] as const) {
      const res = await api.post('/referrals', { name, email: uniqueEmail(name.split(' ')[0]!.toLowerCase()), referredUserExternalId: `cus_${name.replace(' ', '_')}`, affiliateId: jane.id, status });
      assert.equal(res.status, 201, JSON.stringify(res.body));
    }
    const ad = await merchant.page(`${program.base}/referrals?q=ada`);
    assert.match(ad, /Ada Byron/);
    assert.match(ad, /Bob Adams/);
    assert.doesNotMatch(ad, /Cy Young/);
    assert.match(ad, /<strong>2 referrals<\/strong> match these filters/);
    const inactive = await merchant.page(`${program.base}/referrals?status=inactive`);
    assert.match(inactive, /Bob Adams/);
    assert.doesNotMatch(inactive, /Ada Byron/);
    assert.match(await merchant.page(`${program.base}/referrals?affiliate=jane-c&q=young`), /Cy Young/);
    const badDate = await merchant.get(`${program.base}/referrals?from=2026-13-01`);
    assert.equal(badDate.status, 200);
    assert.match(badDate.text, /id="f-from-error">Use a date such as 2026-01-31\./);
  });
});
