import type { ProgramContext } from '../../domain/program-context.ts';
import { minorUnitDigits } from '../../domain/money.ts';

// The messages Tandem sends, each as plain text plus simple HTML. Every value from a user
// (names, program names) is escaped in the HTML; the text part is the message itself.

export interface OutgoingMail {
  kind: 'payout_paid' | 'signup_received' | 'signup_confirm' | 'affiliate_approved' | 'login_link' | 'password_reset' | 'payout_email_changed';
  to: string;
  subject: string;
  text: string;
  html: string;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function amountText(amount: number, currency: string): string {
  return new Intl.NumberFormat('en-US', { style: 'currency', currency, minimumFractionDigits: minorUnitDigits(currency) }).format(amount);
}

/**
 * A merchant's own text (a program's name) in a subject line: quoted, on one line, at most 60
 * characters, so a subject never reads as Tandem's own words, whatever the merchant wrote
 * there (issue 29: "payout paid" subjects carried any text to any inbox).
 */
export function quoted(text: string): string {
  // eslint-disable-next-line no-control-regex -- control characters are what is removed
  const line = text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ').replace(/\s+/g, ' ').replace(/"/g, "'").trim();
  return `"${line.length > 60 ? `${line.slice(0, 59)}…` : line}"`;
}

/** Paragraphs as text (blank lines between) and as HTML (<p> each). */
function compose(paragraphs: string[]): { text: string; html: string } {
  return {
    text: `${paragraphs.join('\n\n')}\n`,
    html: `<!doctype html><html><body style="font-family: system-ui, sans-serif; line-height: 1.5">${paragraphs.map((p) => `<p>${escapeHtml(p)}</p>`).join('')}</body></html>`,
  };
}

/** To the affiliate, when their payout is marked paid. */
export function payoutPaidMail(program: ProgramContext, payout: { amount: number; currency: string; affiliate: { firstName: string; email: string }; method: string | null; reference: string | null }): OutgoingMail {
  const amount = amountText(payout.amount, payout.currency);
  const how = [payout.method, payout.reference && `reference ${payout.reference}`].filter(Boolean).join(', ');
  return {
    kind: 'payout_paid',
    to: payout.affiliate.email,
    subject: `${quoted(program.name)} paid you ${amount}`,
    ...compose([
      `Hello ${payout.affiliate.firstName},`,
      `${program.name} has paid your affiliate commission: ${amount}${how ? ` (${how})` : ''}.`,
      'Thank you for the customers you sent.',
    ]),
  };
}

interface NewAffiliate {
  firstName: string;
  email: string;
}

/**
 * To someone who signed up at the portal: either they are in (open policy: their link to share)
 * or their sign-up waits for the merchant (approval policy).
 */
export function signUpReceivedMail(program: ProgramContext, affiliate: NewAffiliate, linkUrl: string | null): OutgoingMail {
  const waiting = linkUrl === null;
  return {
    kind: 'signup_received',
    to: affiliate.email,
    subject: waiting ? `Your application to the affiliate program of ${quoted(program.name)}` : `Welcome to the affiliate program of ${quoted(program.name)}`,
    ...compose(
      waiting
        ? [`Hello ${affiliate.firstName},`, `Thank you for applying to ${program.name}'s affiliate program. ${program.name} reviews new affiliates; you will get an e-mail as soon as you are approved.`]
        : [`Hello ${affiliate.firstName},`, `You are now an affiliate of ${program.name}. Share your link; every customer who comes through it is credited to you:`, linkUrl],
    ),
  };
}

/**
 * To someone who signed up at an open program's portal: the link that confirms the address and
 * signs them in (their welcome, with the link to share, comes once they have used it), so a
 * sign-up typed with a stranger's address sends that stranger nothing but this.
 */
export function signUpConfirmMail(program: ProgramContext, affiliate: NewAffiliate, url: string): OutgoingMail {
  return {
    kind: 'signup_confirm',
    to: affiliate.email,
    subject: `Confirm your e-mail for the affiliate program of ${quoted(program.name)}`,
    ...compose([
      `Hello ${affiliate.firstName},`,
      `To finish joining ${program.name}'s affiliate program, confirm this is your address by opening this link. It signs you in to your affiliate portal, once, within 24 hours:`,
      url,
      'If you did not sign up, ignore this e-mail: nothing happens without the link.',
    ]),
  };
}

/** To an affiliate whose sign-up the merchant approved: their link to share. */
export function approvedMail(program: ProgramContext, affiliate: NewAffiliate, linkUrl: string): OutgoingMail {
  return {
    kind: 'affiliate_approved',
    to: affiliate.email,
    subject: `You are approved: the affiliate program of ${quoted(program.name)}`,
    ...compose([`Hello ${affiliate.firstName},`, `${program.name} has approved you as an affiliate. Share your link; every customer who comes through it is credited to you:`, linkUrl]),
  };
}

/** The one-time login link to an affiliate's portal (15 minutes). */
export function loginLinkMail(program: ProgramContext, affiliate: NewAffiliate, url: string): OutgoingMail {
  return {
    kind: 'login_link',
    to: affiliate.email,
    subject: `Your link to the affiliate portal of ${quoted(program.name)}`,
    ...compose([
      `Hello ${affiliate.firstName},`,
      `Open this link to sign in to ${program.name}'s affiliate portal. It works once, for 15 minutes:`,
      url,
      'If you did not ask for it, ignore this e-mail: nobody can sign in without the link.',
    ]),
  };
}

/**
 * To the address payouts went to until now, when it changes: if someone else changed it (a
 * stolen portal session, a mistake), the affiliate hears of it before the next payout.
 */
export function payoutEmailChangedMail(program: ProgramContext, affiliate: { firstName: string }, change: { from: string; to: string }): OutgoingMail {
  return {
    kind: 'payout_email_changed',
    to: change.from,
    subject: `Your payout e-mail for ${quoted(program.name)} was changed`,
    ...compose([
      `Hello ${affiliate.firstName},`,
      `The e-mail address where ${program.name} sends your affiliate payouts was changed from ${change.from} to ${change.to}. Payouts go to the new address from now on.`,
      `If you made this change, there is nothing to do. If you did not, sign in to ${program.name}'s affiliate portal, set your payout e-mail back, and tell ${program.name} at once.`,
    ]),
  };
}

/** The one-time "forgot password" link to a Tandem account (30 minutes). */
export function passwordResetMail(email: string, url: string): OutgoingMail {
  return {
    kind: 'password_reset',
    to: email,
    subject: 'Reset your Tandem password',
    ...compose([
      'Someone (we hope you) asked to reset the password of your Tandem account.',
      'Open this link to choose a new password. It works once, for 30 minutes:',
      url,
      'If you did not ask for it, ignore this e-mail: your password stays as it is.',
    ]),
  };
}
