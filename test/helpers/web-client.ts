import assert from 'node:assert/strict';

// A tiny browser stand-in for page tests over plain HTTP: keeps cookies, never follows
// redirects (tests assert where they point), and reads the CSRF token out of forms.

export interface WebResponse {
  status: number;
  headers: Headers;
  text: string;
  /** The Location header, for redirects. */
  location: string | null;
}

export class WebClient {
  private readonly cookies = new Map<string, string>();

  /** `headers` go on every request (a test behind a simulated proxy sends X-Forwarded-For). */
  constructor(
    readonly baseUrl: string,
    private readonly extraHeaders: Record<string, string> = {},
  ) {}

  /** `form` as fields, or as an encoded body (to send a field twice). */
  async request(method: string, path: string, form?: Record<string, string> | string): Promise<WebResponse> {
    const headers: Record<string, string> = { ...this.extraHeaders };
    if (this.cookies.size > 0) headers.cookie = [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
    if (form) headers['content-type'] = 'application/x-www-form-urlencoded';
    const response = await fetch(new URL(path, this.baseUrl), { method, headers, body: form === undefined ? undefined : typeof form === 'string' ? form : new URLSearchParams(form).toString(), redirect: 'manual' });
    for (const cookie of response.headers.getSetCookie()) {
      const [pair] = cookie.split(';');
      const [name, value] = pair!.split('=');
      if (/max-age=0|expires=thu, 01 jan 1970/i.test(cookie)) this.cookies.delete(name!);
      else this.cookies.set(name!, value!);
    }
    return { status: response.status, headers: response.headers, text: await response.text(), location: response.headers.get('location') };
  }

  /** The value of a cookie the server set, as the browser keeps it (undefined when it has none). */
  cookie(name: string): string | undefined {
    return this.cookies.get(name);
  }

  /** Puts a cookie in the jar, as a browser would send one copied from elsewhere (or forged). */
  setCookie(name: string, value: string): void {
    this.cookies.set(name, value);
  }

  get(path: string): Promise<WebResponse> {
    return this.request('GET', path);
  }

  post(path: string, form: Record<string, string>): Promise<WebResponse> {
    return this.request('POST', path, form);
  }

  /** Loads the login page (which sets the anonymous CSRF cookie) and logs in; returns the redirect. */
  async logIn(email: string, password: string, next?: string): Promise<WebResponse> {
    const page = await this.get(next ? `/login?next=${encodeURIComponent(next)}` : '/login');
    const response = await this.post('/login', { _csrf: csrfOf(page.text), email, password, next: next ?? '' });
    assert.equal(response.status, 303, `login failed: ${response.status} ${response.text.slice(0, 300)}`);
    return response;
  }
}

/** The CSRF token of the first form on the page. */
export function csrfOf(page: string): string {
  const match = /name="_csrf" value="([^"]+)"/.exec(page);
  assert.ok(match, 'the page has a form with a CSRF token');
  return match[1]!;
}

/** Where a page's "Next" pager link points (rel="next"), or null on the last page. */
export function nextLink(page: string): string | null {
  const match = /<a href="([^"]+)" rel="next">/.exec(page);
  return match ? match[1]!.replaceAll('&amp;', '&') : null;
}
