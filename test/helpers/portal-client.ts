import assert from 'node:assert/strict';
import { csrfOf, type WebClient } from './web-client.ts';
import type { SmtpReceiver } from './smtp-receiver.ts';

// Signing in to an affiliate portal as an affiliate's browser does: a link from an e-mail,
// opened (which uses nothing), then its button pressed.

/** The path of the portal sign-in link in a message's text (sign-in, or a sign-up's confirmation). */
export function portalLinkPathIn(text: string): string {
  const link = /http:\/\/tandem\.test(\/portal\/[a-z0-9-]+\/login\/[A-Za-z0-9_-]+)/.exec(text);
  assert.ok(link, text);
  return link[1]!;
}

/** Asks for a login link by e-mail in `who`'s browser; returns its path from the message that arrives. */
export async function emailedLoginPath(who: WebClient, smtp: SmtpReceiver, slug: string, email: string): Promise<string> {
  const before = smtp.received.length;
  const page = await who.get(`/portal/${slug}/login`);
  assert.equal((await who.post(`/portal/${slug}/login`, { _csrf: csrfOf(page.text), email })).status, 200);
  const mail = await smtp.waitFor((m) => smtp.received.indexOf(m) >= before && m.to.includes(email), 'the login e-mail');
  return portalLinkPathIn(mail.text);
}

/** Opens a sign-in link and presses its button; returns the signed-in browser. */
export async function signInByLink(who: WebClient, path: string): Promise<WebClient> {
  const page = await who.get(path);
  assert.equal(page.status, 200, page.text.slice(0, 300));
  const done = await who.post(path, { _csrf: csrfOf(page.text) });
  assert.equal(done.status, 303);
  assert.match(done.location ?? '', /\/home$/);
  return who;
}
