'use strict';
/* global require, module, Buffer, URLSearchParams */
/* eslint-disable @typescript-eslint/no-require-imports -- CommonJS, the module format Zapier runs */

// Small HTTP stand-ins on 127.0.0.1: a webhook receiver (what Zapier's hook URL is to Tandem)
// and a browser that keeps cookies and reads forms (a user going through the connect flow).

const { createServer } = require('node:http');
const { realFetch, sleep } = require('./tandem');

/** Records every request (headers, exact body, parsed JSON); answers 200. */
async function startReceiver() {
  const received = [];
  const server = createServer((request, response) => {
    const chunks = [];
    request.on('data', (chunk) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      const url = new URL(request.url, 'http://receiver.invalid');
      received.push({ method: request.method, path: url.pathname, query: Object.fromEntries(url.searchParams), headers: request.headers, body, json });
      response.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${server.address().port}`;
  return {
    base,
    received,
    /** Resolves with the first request matching `predicate`, or fails after `timeoutMs`. */
    async waitFor(predicate, what, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = received.find(predicate);
        if (found) return found;
        if (Date.now() > deadline) {
          throw new Error(`timed out waiting for ${what}; received: ${received.map((r) => `${r.method} ${r.path} ${r.json ? r.json.type : ''}`).join(', ') || 'nothing'}`);
        }
        await sleep(25);
      }
    },
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

const ENTITIES = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'" };
const unescape = (text) => text.replace(/&(amp|lt|gt|quot|#39);/g, (entity) => ENTITIES[entity]);

/** The hidden inputs of the form whose opening tag matches `formPattern` (the first form if omitted). */
function hiddenFields(page, formPattern = /<form\b[^>]*>/) {
  const start = page.search(formPattern);
  if (start < 0) throw new Error(`no form matching ${formPattern} on the page:\n${page.slice(0, 1000)}`);
  const form = page.slice(start, page.indexOf('</form>', start));
  const fields = {};
  for (const match of form.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) fields[unescape(match[1])] = unescape(match[2]);
  return fields;
}

/** A browser stand-in: keeps cookies, never follows redirects (the test follows them itself). */
class Browser {
  constructor(baseUrl) {
    this.baseUrl = baseUrl;
    this.cookies = new Map();
  }

  async request(method, target, form) {
    const headers = {};
    if (this.cookies.size > 0) headers.cookie = [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
    if (form) headers['content-type'] = 'application/x-www-form-urlencoded';
    const response = await realFetch(new URL(target, this.baseUrl), {
      method,
      headers,
      body: form ? new URLSearchParams(form).toString() : undefined,
      redirect: 'manual',
    });
    for (const cookie of response.headers.getSetCookie()) {
      const [pair] = cookie.split(';');
      const index = pair.indexOf('=');
      const name = pair.slice(0, index);
      if (/max-age=0|expires=thu, 01 jan 1970/i.test(cookie)) this.cookies.delete(name);
      else this.cookies.set(name, pair.slice(index + 1));
    }
    const location = response.headers.get('location');
    return { status: response.status, text: await response.text(), location: location && new URL(location, this.baseUrl).toString() };
  }

  get(target) {
    return this.request('GET', target);
  }

  post(target, form) {
    return this.request('POST', target, form);
  }
}

module.exports = { startReceiver, Browser, hiddenFields };
