import type { ProgramContext } from '../../domain/program-context.ts';
import { minorUnitDigits } from '../../domain/money.ts';

// The messages Tandem sends, each as plain text plus simple HTML. Every value from a user
// (names, program names) is escaped in the HTML; the text part is the message itself.

export interface OutgoingMail {
  kind: 'payout_paid';
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
    subject: `${program.name} paid you ${amount}`,
    ...compose([
      `Hello ${payout.affiliate.firstName},`,
      `${program.name} has paid your affiliate commission: ${amount}${how ? ` (${how})` : ''}.`,
      'Thank you for the customers you sent.',
    ]),
  };
}
