import assert from 'node:assert/strict';
import { csrfOf, WebClient, type WebResponse } from './web-client.ts';
import { uniqueEmail } from './fixtures.ts';

// A signed-in browser over plain HTTP for dashboard tests: signs up through the real forms,
// keeps the session cookie (WebClient), and submits forms the way a browser does — load the
// page, take its CSRF token, post.

export const PASSWORD = 'a long password';

export { uniqueEmail } from './fixtures.ts';

export class BrowserSession extends WebClient {
  constructor(
    baseUrl: string,
    readonly email: string,
  ) {
    super(baseUrl);
  }

  /** A new account made with the sign-up form; the session is logged in. */
  static async signUp(baseUrl: string, email = uniqueEmail()): Promise<BrowserSession> {
    const session = new BrowserSession(baseUrl, email);
    const page = await session.get('/signup');
    assert.equal(page.status, 200);
    const response = await session.post('/signup', { _csrf: csrfOf(page.text), email, password: PASSWORD, next: '/dashboard' });
    assert.equal(response.status, 303, `sign-up failed: ${response.status} ${response.text.slice(0, 300)}`);
    return session;
  }

  /** GETs a page that must answer 200 and returns its HTML. */
  async page(path: string): Promise<string> {
    const response = await this.get(path);
    assert.equal(response.status, 200, `GET ${path}: ${response.status} ${response.location ?? ''} ${response.text.slice(0, 500)}`);
    return response.text;
  }

  /** The CSRF token of the forms on a page (one per session, the same in every form). */
  async csrf(path = '/dashboard'): Promise<string> {
    return csrfOf(await this.page(path));
  }

  /** Loads `pagePath` for its CSRF token, then posts `fields` to `action`, as the page's form would. */
  async submit(pagePath: string, action: string, fields: Record<string, string>): Promise<WebResponse> {
    return this.post(action, { _csrf: await this.csrf(pagePath), ...fields });
  }

  /** Creates a program with the dashboard's form; returns its dashboard path. */
  async createProgram(fields: Partial<Record<'name' | 'domain' | 'currency' | 'commissionRate' | 'logoUrl' | 'baseUrls' | 'referralParam', string>> = {}): Promise<{ id: string; base: string }> {
    const response = await this.submit('/dashboard', '/dashboard/programs', { name: 'Acme', domain: 'acme.example', ...fields });
    assert.equal(response.status, 303, `program creation failed: ${response.status} ${response.text.slice(0, 500)}`);
    const match = /^\/dashboard\/programs\/([0-9a-f-]{36})\?done=program-created$/.exec(response.location ?? '');
    assert.ok(match, `redirects to the new program: ${response.location}`);
    return { id: match[1]!, base: `/dashboard/programs/${match[1]}` };
  }

  /** Creates an API key with the dashboard's form; returns the token shown once. */
  async createApiKey(base: string, name = 'test key'): Promise<{ token: string; page: string }> {
    const response = await this.submit(`${base}/keys`, `${base}/keys`, { name });
    assert.equal(response.status, 200, response.text.slice(0, 500));
    const match = /id="new-token">(tdm_[A-Za-z0-9_-]+)</.exec(response.text);
    assert.ok(match, 'the new key is shown');
    return { token: match[1]!, page: response.text };
  }
}
