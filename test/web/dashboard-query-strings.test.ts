// Dashboard list filters and searches reach the database. A query string with a control
// character (PostgreSQL refuses NUL in text: it was a 500), a lone surrogate or a broken
// %-escape gets the dashboard's 400 error page on every page, on both databases; ordinary
// filters keep working.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { apiClient, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { BrowserSession, uniqueEmail } from '../helpers/browser-session.ts';
import { newAffiliate, newSale } from '../helpers/fixtures.ts';

let test: TestServer;
let owner: BrowserSession;
let program: { id: string; base: string };
let api: ApiClient;

before(async () => {
  test = await startTestServer();
  owner = await BrowserSession.signUp(test.url, uniqueEmail('owner'));
  program = await owner.createProgram({ name: 'Filters', domain: 'filters.example' });
  api = apiClient(test.url, (await owner.createApiKey(program.base)).token, program.id);
});
after(() => test?.close());

const HOSTILE = ['%00', 'a%00b', '%01', '%1F', '%7F', '%ED%A0%80', '%zz', '%E0%A4%A', '%'];
const LISTS = ['/sales?affiliate=', '/referrals?affiliate=', '/affiliates?q=', '/sales?from=', '/sales?to=', '/sales?cursor=', '?done='];

describe('dashboard query strings', () => {
  it('answer the 400 error page for control characters and broken encodings, never a 500', async () => {
    for (const list of LISTS) {
      for (const hostile of HOSTILE) {
        const path = `${program.base}${list}${hostile}`;
        const res = await owner.get(path);
        assert.equal(res.status, 400, `${path}: ${res.status}`);
        assert.match(res.headers.get('content-type') ?? '', /^text\/html/, path);
        assert.match(res.text, /<h1>Something is not right<\/h1>/, path);
      }
    }
    // In a parameter's name too.
    assert.equal((await owner.get(`${program.base}/sales?a%00b=1`)).status, 400);
  });

  it('keep ordinary filters working, tab and unknown e-mails included', async () => {
    const affiliate = await newAffiliate(api);
    await newSale(api, { referralId: affiliate.id, name: 'Filtered Customer' });
    const byEmail = await owner.page(`${program.base}/sales?affiliate=${encodeURIComponent(affiliate.email)}`);
    assert.match(byEmail, /Filtered Customer/);
    const search = await owner.page(`${program.base}/affiliates?q=${encodeURIComponent(affiliate.email.slice(0, 6))}`);
    assert.match(search, new RegExp(affiliate.email));
    // A tab is text a search may hold; an unknown e-mail is shown beside the field.
    assert.match(await owner.page(`${program.base}/referrals?affiliate=a%09b`), /No affiliate in this program has the e-mail, id or link/);
    assert.match(await owner.page(`${program.base}/sales?affiliate=${encodeURIComponent('nobody@example.com')}`), /No affiliate in this program has the e-mail, id or link/);
  });
});
