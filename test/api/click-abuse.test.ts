// Clicks that cannot be inflated cheaply (issue 17 item 6): the visitor is the server's (address
// and browser, hashed under a key of the day), never the id a report carries; an IPv6 network
// counts as one address (/64) for the visitor and the per-address limit; each program has a
// ceiling of counted clicks a minute that no other program's clicks reach; landing URLs are
// stored canonical and bounded; raw click rows are purged after the retention period while
// every counter and daily figure stays. Reports come over loopback with X-Forwarded-For from
// a trusted proxy (loopback), so each can come from any address.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { apiClient, rawDb, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { assertProblem } from '../helpers/api-assertions.ts';
import { BrowserSession, PASSWORD } from '../helpers/browser-session.ts';
import { newAffiliate } from '../helpers/fixtures.ts';
import { assertCountersMatchRows } from '../helpers/recount.ts';
import { CLICK_ADDRESS_LIMIT } from '../../src/modules/tracking/tracking.routes.ts';
import { LANDING_URL_MAX } from '../../src/modules/tracking/click.service.ts';
import { purgeExpired } from '../../src/modules/maintenance/purge-expired.ts';

const BROWSER = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36';
const DAY_MS = 86_400_000;
const CEILING = 5;

/** Noon UTC today: the tests move the servers' clocks from there, by whole minutes and days. */
const start = new Date(Math.floor(Date.now() / DAY_MS) * DAY_MS + DAY_MS / 2);
const dayOf = (date: Date) => date.toISOString().slice(0, 10);

let now = start;
let t: TestServer;

before(async () => {
  t = await startTestServer({ trustProxy: ['loopback'], clickProgramLimitPerMinute: CEILING }, { clock: () => now });
});
after(() => t?.close());

interface Report {
  server?: TestServer;
  programId: string;
  domain: string;
  address: string;
  url: string;
  userAgent?: string;
  visitorId?: string;
}

async function report(r: Report) {
  const res = await fetch(`${(r.server ?? t).url}/api/track/click?programId=${r.programId}`, {
    method: 'POST',
    headers: { 'content-type': 'text/plain', origin: `https://shop.${r.domain}`, 'user-agent': r.userAgent ?? BROWSER, 'x-forwarded-for': r.address },
    body: JSON.stringify({ url: r.url, ...(r.visitorId === undefined ? {} : { visitorId: r.visitorId }) }),
  });
  return { status: res.status, headers: res.headers, body: await res.json() };
}

/** A program with one affiliate, and a report of a click on that affiliate's link. */
async function programWithLink(server = t) {
  const api = await server.createTenant();
  const domain = (await api.get('/me')).body.domain as string;
  const affiliate = await newAffiliate(api);
  const click = (address: string, extra: Partial<Report> = {}) =>
    report({ server, programId: api.programId, domain, address, url: `https://shop.${domain}/?ref=${affiliate.link}`, ...extra });
  return { api, domain, affiliate, click };
}

async function numberOfClicks(api: ApiClient, affiliateId: string): Promise<number> {
  return (await api.get(`/affiliates?id=${affiliateId}`)).body.numberOfClicks;
}

function clickRows(programId: string, server = t) {
  return rawDb(server).selectFrom('clicks').selectAll().where('program_id', '=', programId).orderBy('created_at').execute();
}

async function dailyClicks(programId: string): Promise<number> {
  const rows = await rawDb(t).selectFrom('click_days').select('clicks').where('program_id', '=', programId).execute();
  return rows.reduce((sum, r) => sum + Number(r.clicks), 0);
}

describe('the visitor is the server’s', () => {
  it('a new visitor id in the report is not a new visitor: one click per address, browser, link and day', async () => {
    now = start;
    const { api, affiliate, click } = await programWithLink();
    assert.deepEqual((await click('198.51.100.7', { visitorId: 'visitor-aaaa' })).body.counted, true);
    for (const visitorId of ['visitor-bbbb', 'visitor-cccc', undefined]) {
      const res = await click('198.51.100.7', { visitorId });
      assert.deepEqual([res.status, res.body.referral, res.body.counted], [200, affiliate.link, false], `visitorId ${visitorId}`);
    }
    assert.equal(await numberOfClicks(api, affiliate.id), 1);
    assert.equal((await clickRows(api.programId)).length, 1);

    // Another browser, or another address, is another visitor.
    assert.equal((await click('198.51.100.7', { userAgent: `${BROWSER} Edg/131.0` })).body.counted, true);
    assert.equal((await click('198.51.100.8')).body.counted, true);
    assert.equal(await numberOfClicks(api, affiliate.id), 3);

    // The next UTC day the same visitor counts again, under a key that matches none of the day before.
    now = new Date(start.getTime() + DAY_MS);
    assert.equal((await click('198.51.100.7', { visitorId: 'visitor-aaaa' })).body.counted, true);
    assert.equal((await click('198.51.100.7', { visitorId: 'visitor-dddd' })).body.counted, false);
    const rows = await clickRows(api.programId);
    const firstDay = new Set(rows.filter((r) => r.day === dayOf(start)).map((r) => r.visitor_key));
    const secondDay = rows.filter((r) => r.day === dayOf(now));
    assert.deepEqual([firstDay.size, secondDay.length], [3, 1]);
    assert.ok(!firstDay.has(secondDay[0]!.visitor_key), 'the same visitor is not linkable across days');
    assert.equal(await numberOfClicks(api, affiliate.id), 4);
    await assertCountersMatchRows(rawDb(t), api.programId);
  });
});

describe('IPv6 counts per /64', () => {
  it('two addresses of one /64 are one visitor and share the per-address limit; another /64 is not held back', async () => {
    now = start;
    const { api, domain, affiliate, click } = await programWithLink();
    const [one, two, elsewhere] = ['2001:db8:17:6::1', '2001:db8:17:6:a:b:c:d', '2001:db8:17:7::1'];
    assert.equal((await click(one)).body.counted, true);
    assert.equal((await click(two)).body.counted, false, 'same /64, same browser: the same visitor');
    assert.equal((await click(elsewhere)).body.counted, true);
    assert.equal(await numberOfClicks(api, affiliate.id), 2);

    // Two reports of the /64 are spent; the rest of its minute alternates between its addresses.
    const nothing = (address: string) => report({ programId: api.programId, domain, address, url: `https://shop.${domain}/?ref=nobody` });
    for (let i = 2; i < CLICK_ADDRESS_LIMIT.max; i++) assert.equal((await nothing(i % 2 ? one : two)).status, 200, `report ${i + 1}`);
    for (const address of [one, two, '2001:db8:17:6:ffff:ffff:ffff:ffff']) {
      const refused = await nothing(address);
      assertProblem(refused, 429, 'rate_limited');
      assert.ok(Number(refused.headers.get('retry-after')) > 0);
    }
    assert.equal((await nothing(elsewhere)).status, 200, 'another /64 has its own limit');
    // An IPv4 client seen on a dual-stack socket (::ffff:a.b.c.d) is its IPv4 address.
    assert.equal((await click('::ffff:192.0.2.44')).body.counted, true);
    assert.equal((await click('192.0.2.44')).body.counted, false);
  });
});

describe('the per-program ceiling', () => {
  it(`counts at most ${CEILING} clicks a minute for a program, still answers the referral beyond it, and never holds back another program`, async () => {
    now = start;
    const busy = await programWithLink();
    const quiet = await programWithLink();
    for (let i = 1; i <= CEILING; i++) assert.equal((await busy.click(`203.0.113.${i}`)).body.counted, true, `click ${i}`);
    for (let i = CEILING + 1; i <= CEILING + 3; i++) {
      const res = await busy.click(`203.0.113.${i}`);
      // The script keeps the referral (the visitor is still attributed); the click is not counted.
      assert.deepEqual([res.status, res.body.referral, res.body.counted], [200, busy.affiliate.link, false], `click ${i}`);
    }
    assert.equal(await numberOfClicks(busy.api, busy.affiliate.id), CEILING);
    assert.equal((await clickRows(busy.api.programId)).length, CEILING, 'nothing stored beyond the ceiling');
    assert.equal(await dailyClicks(busy.api.programId), CEILING);

    // The same minute, another program counts all of its own, up to its own ceiling.
    for (let i = 1; i <= CEILING; i++) assert.equal((await quiet.click(`203.0.113.${100 + i}`)).body.counted, true, `other program's click ${i}`);
    assert.equal(await numberOfClicks(quiet.api, quiet.affiliate.id), CEILING);

    // Reports arriving at once (PostgreSQL runs them on several connections) count exactly up to the ceiling.
    const burst = await programWithLink();
    const answers = await Promise.all(Array.from({ length: 3 * CEILING }, (_, i) => burst.click(`203.0.113.${150 + i}`)));
    assert.deepEqual(answers.map((a) => a.status), answers.map(() => 200));
    assert.equal(answers.filter((a) => a.body.counted).length, CEILING);
    assert.equal(await numberOfClicks(burst.api, burst.affiliate.id), CEILING);
    await assertCountersMatchRows(rawDb(t), burst.api.programId);

    // A minute later the busy program counts again, and a visitor refused before is not taken for a repeat.
    now = new Date(start.getTime() + 61_000);
    assert.equal((await busy.click(`203.0.113.${CEILING + 1}`)).body.counted, true);
    assert.equal(await numberOfClicks(busy.api, busy.affiliate.id), CEILING + 1);
    await assertCountersMatchRows(rawDb(t), busy.api.programId);
  });
});

describe('landing URLs', () => {
  it('are stored canonical (no fragment, no credentials, percent-encoded) and never longer than the limit', async () => {
    now = new Date(start.getTime() + 2 * 60_000);
    const { api, domain, affiliate, click } = await programWithLink();
    const base = `https://shop.${domain}`;
    const ref = `ref=${affiliate.link}`;
    let visitor = 0;
    const land = (url: string) => click(`192.0.2.${++visitor}`, { url });

    assert.equal((await land(`${base}/welcome?${ref}&utm=a#section-2`)).body.counted, true);
    assert.equal((await land(`https://someone:secret@shop.${domain}/p?${ref}#x`)).body.counted, true);
    assert.equal((await land(`${base}/café?${ref}&q=naïve`)).body.counted, true);
    // Sent at the limit with a fragment: stored without it.
    const long = `${base}/?${ref}&pad=`;
    const fragment = '#f'.padEnd(100, 'f');
    assert.equal((await land(`${long}${'a'.repeat(LANDING_URL_MAX - long.length - fragment.length)}${fragment}`)).body.counted, true);
    // Within the limit as sent, and exactly at it once é becomes %C3%A9: kept.
    const pad = LANDING_URL_MAX - long.length - '%C3%A9'.length;
    assert.equal((await land(`${long}${'a'.repeat(pad)}é`)).body.counted, true);

    const stored = (await clickRows(api.programId)).map((r) => r.landing_url);
    assert.deepEqual(stored.slice(0, 3), [`${base}/welcome?${ref}&utm=a`, `${base}/p?${ref}`, `${base}/caf%C3%A9?${ref}&q=na%C3%AFve`]);
    assert.equal(stored[3], `${long}${'a'.repeat(LANDING_URL_MAX - long.length - fragment.length)}`);
    assert.equal(stored[4], `${long}${'a'.repeat(pad)}%C3%A9`);
    assert.equal(stored[4]!.length, LANDING_URL_MAX);
    for (const url of stored) {
      assert.ok(url.length <= LANDING_URL_MAX, `${url.length} characters`);
      assert.equal(url, new URL(url).href, 'canonical: serialising it again changes nothing');
      assert.ok(!url.includes('#') && !url.includes('secret'));
    }
    assert.equal(await numberOfClicks(api, affiliate.id), 5);
  });

  it('longer than the limit: the click is counted and its URL stored cut at the limit, never inside an escape', async () => {
    now = new Date(start.getTime() + 3 * 60_000);
    const { api, domain, affiliate, click } = await programWithLink();
    const ref = `ref=${affiliate.link}`;
    const page = (path: string) => `https://shop.${domain}/${path}?${ref}&pad=`;
    let visitor = 0;
    const land = (url: string) => click(`192.0.2.${100 + ++visitor}`, { url });
    const fill = (prefix: string, length: number) => prefix + 'a'.repeat(length - prefix.length);

    // [sent, stored]
    const cases: [string, string][] = [
      // 5,000 characters: the first 2,000 are kept.
      [fill(page('ascii'), 5000), fill(page('ascii'), LANDING_URL_MAX)],
      // One character over once é is encoded: the cut would split %C3%A9, so all of é goes.
      [`${fill(page('e-at-cut'), LANDING_URL_MAX - 5)}é`, fill(page('e-at-cut'), LANDING_URL_MAX - 5)],
      // 1,000 é (6,000 characters encoded) and 500 emoji (12 each, a surrogate pair as sent): whole characters only.
      [`${page('e')}${'é'.repeat(1000)}`, `${page('e')}${'%C3%A9'.repeat(Math.floor((LANDING_URL_MAX - page('e').length) / 6))}`],
      [`${page('emoji')}${'😀'.repeat(500)}`, `${page('emoji')}${'%F0%9F%98%80'.repeat(Math.floor((LANDING_URL_MAX - page('emoji').length) / 12))}`],
      // The referral parameter after the cut still counts the click; the path cut before a `/.` segment, not in it.
      [`${fill(`https://shop.${domain}/`, LANDING_URL_MAX - 2)}/..x?${ref}`, `${fill(`https://shop.${domain}/`, LANDING_URL_MAX - 2)}/`],
    ];
    for (const [sent] of cases) {
      const answer = await land(sent);
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      assert.deepEqual([answer.body.referral, answer.body.counted], [affiliate.link, true], sent.slice(0, 60));
    }
    const stored = (await clickRows(api.programId)).map((r) => r.landing_url);
    assert.equal(stored.length, cases.length);
    assert.deepEqual([...stored].sort(), cases.map(([, cut]) => cut).sort(), 'each stored cut as expected');
    for (const url of stored) {
      assert.ok(url.length <= LANDING_URL_MAX && url.length > LANDING_URL_MAX - 12, `${url.length} characters`);
      assert.equal(url, new URL(url).href, 'canonical: serialising it again changes nothing');
      assert.doesNotThrow(() => decodeURI(url), 'no broken escape');
    }
    assert.equal(await numberOfClicks(api, affiliate.id), cases.length);
  });
});

describe('retention', () => {
  it('purges raw click rows past CLICK_RETENTION_DAYS; counters, the overview and its chart, and the affiliate page are unchanged', async () => {
    let clock = start;
    // No worker in the server: this test runs the worker's purge itself, when it chooses.
    const server = await startTestServer({ trustProxy: ['loopback'], worker: false }, { clock: () => clock });
    try {
      const owner = await BrowserSession.signUp(server.url);
      const { id, base } = await owner.createProgram({ name: 'Retained', domain: 'retained.example' });
      const api = apiClient(server.url, (await owner.createApiKey(base)).token, id);
      const [ann, bob] = [await newAffiliate(api), await newAffiliate(api)];
      const click = (link: string, address: string) =>
        report({ server, programId: id, domain: 'retained.example', address, url: `https://shop.retained.example/?ref=${link}` });

      const days = [0, 1, 32].map((n) => dayOf(new Date(start.getTime() + n * DAY_MS)));
      for (const address of ['192.0.2.1', '192.0.2.2', '192.0.2.3']) assert.equal((await click(ann.link, address)).body.counted, true);
      assert.equal((await click(bob.link, '192.0.2.1')).body.counted, true);
      clock = new Date(start.getTime() + DAY_MS);
      assert.equal((await click(ann.link, '192.0.2.1')).body.counted, true);
      clock = new Date(start.getTime() + 32 * DAY_MS);
      assert.equal((await click(bob.link, '192.0.2.9')).body.counted, true);
      await owner.logIn(owner.email, PASSWORD); // the session of 32 days ago has expired

      /** Every figure a merchant sees of the clicks. */
      const figures = async () => {
        const overview = await owner.page(`${base}?days=90`);
        const chartDay = (day: string) => new RegExp(`<th scope="row">${day}</th>(?:<td class="num">[^<]*</td>){3}<td class="num">([^<]*)</td>`).exec(overview)?.[1];
        const annPage = await owner.page(`${base}/affiliates/${ann.id}`);
        return {
          total: /data-stat="clicks">([^<]*)</.exec(overview)?.[1],
          summary: /<desc id="chart-desc">[^<]*?(\d+ clicks?)\.<\/desc>/.exec(overview)?.[1],
          chart: days.map(chartDay),
          annPage: /data-stat="clicks">([^<]*)</.exec(annPage)?.[1],
          api: await Promise.all(
            [ann, bob].map(async (a) => [(await api.get(`/affiliates?id=${a.id}`)).body.numberOfClicks, (await api.get(`/links?link=${a.link}`)).body.clicks]),
          ),
        };
      };
      const expected = { total: '6', summary: '6 clicks', chart: ['4', '1', '1'], annPage: '4', api: [[4, 4], [2, 2]] };
      assert.deepEqual(await figures(), expected);

      const db = rawDb(server);
      // A longer retention keeps the 32-day-old rows; the configured 30 days does not.
      assert.equal((await purgeExpired(db, clock, { clickRetentionDays: 40 })).clicks, 0);
      assert.equal(server.config.clickRetentionDays, 30);
      assert.equal((await purgeExpired(db, clock, server.config)).clicks, 5);
      const left = await clickRows(id, server);
      assert.deepEqual(left.map((r) => r.day), [days[2]], "only today's row is left");

      assert.deepEqual(await figures(), expected);
      // Today's row still makes a repeat visit today no new click.
      assert.equal((await click(bob.link, '192.0.2.9')).body.counted, false);
      assert.equal((await api.get(`/affiliates?id=${bob.id}`)).body.numberOfClicks, 2);
    } finally {
      await server.close();
    }
  });
});
