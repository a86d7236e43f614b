import { ApiError } from '../../../../domain/errors.ts';
import { hmacSha256Hex, sameSecret } from '../../../../domain/constant-time.ts';
import { ignore, parseEventBody, providerAmountToMinor, withRead } from '../../billing-input.ts';
import type { BillingAction, BillingEnvelope, BillingProvider, Delivery } from '../../billing-provider.ts';
import { readAdjustment, readCustomer, readEnvelope, readTransaction } from './paddle-payload.ts';

// Paddle Billing (CONTRACT "Billing providers beyond Stripe"; developer.paddle.com/webhooks),
// connected by a notification destination's secret key. Its checkout puts `customData` on the
// transaction, and its transaction events name the customer only by id: the e-mail comes in
// customer.created / customer.updated, in either order (billing.service.ts pairs them). Refunds
// and chargebacks are adjustments, each with its own totals, applied once per adjustment id.

/** Paddle's notification secret key (pdl_ntfset_…). */
const PADDLE_SECRET = /^pdl_ntfset_[A-Za-z0-9_+/=-]{8,300}$/;
const TOLERANCE_SECONDS = 300;
const BAD_SIGNATURE = "The Paddle-Signature header is missing, or does not match this program's secret key within 5 minutes.";

/** Paddle's zero-decimal currencies (developer.paddle.com/api-reference/currencies): every other it counts in hundredths. */
const ZERO_DECIMAL = new Set(['JPY', 'KRW']);
const paddleDigits = (currency: string) => (ZERO_DECIMAL.has(currency.toUpperCase()) ? 0 : 2);

/** `ts=…;h1=…[;h1=…]`: the time and every signature (a secret rotation sends one per secret). */
function parseSignature(header: unknown): { ts: number; h1: string[] } | null {
  if (typeof header !== 'string' || header.length > 2000) return null;
  let ts: number | undefined;
  const h1: string[] = [];
  for (const part of header.split(';')) {
    const [key, value] = part.trim().split('=', 2);
    if (key === 'ts' && /^\d{1,12}$/.test(value ?? '')) ts = Number(value);
    else if (key === 'h1' && value) h1.push(value);
  }
  return ts === undefined || h1.length === 0 ? null : { ts, h1 };
}

/**
 * `Paddle-Signature` checked as Paddle documents it: HMAC-SHA256 of `{ts}:{raw body}` under the
 * secret key, hex, equal to one of the `h1` values (compared in constant time), and `ts` within
 * 5 minutes of now either way.
 */
async function verify({ rawBody, headers }: Delivery, secret: string): Promise<BillingEnvelope> {
  const signature = parseSignature(headers['paddle-signature']);
  // Real time, as Paddle signs: a program's clock (a test clock) never widens the window.
  // eslint-disable-next-line no-restricted-syntax
  if (!signature || Math.abs(Date.now() / 1000 - signature.ts) > TOLERANCE_SECONDS) throw new ApiError('bad_request', BAD_SIGNATURE);
  const expected = hmacSha256Hex(secret, Buffer.concat([Buffer.from(`${signature.ts}:`), rawBody]));
  if (!signature.h1.some((given) => sameSecret(expected, given))) throw new ApiError('bad_request', BAD_SIGNATURE);
  const parsed = parseEventBody(rawBody);
  const envelope = readEnvelope(parsed);
  if ('reason' in envelope) throw new ApiError('bad_request', envelope.reason);
  return envelope.value;
}


function actionOf({ type, event }: BillingEnvelope): BillingAction {
  switch (type) {
    case 'customer.created':
    case 'customer.updated':
      return withRead(readCustomer(event), ({ customer, referral }) => ({ kind: 'refer', customer, referral, discount: null }));
    case 'transaction.completed':
      return withRead(readTransaction(event), (txn) => {
        if (txn.status !== 'completed') return ignore(`the transaction is ${txn.status}, not completed`);
        return {
          kind: 'pay',
          customerId: txn.customerId,
          // The customer came with their first transaction; their e-mail is in their own events.
          customer: txn.customerId === undefined ? undefined : { id: txn.customerId, email: undefined, name: undefined, since: txn.createdAt },
          referral: txn.referral,
          discount: txn.discountId ? { id: txn.discountId } : null,
          payment: { id: txn.id, amount: txn.netOfTax, amountField: 'data.details.totals (total − tax)', currency: txn.currency, paidAt: txn.paidAt },
        };
      });
    case 'adjustment.created':
    case 'adjustment.updated':
      return withRead(readAdjustment(event), (adjustment) => {
        if (adjustment.action !== 'refund' && adjustment.action !== 'chargeback') return ignore(`an adjustment of action ${adjustment.action} changes no sale`);
        if (adjustment.status !== 'approved') return ignore(`the ${adjustment.action} is ${adjustment.status}, not approved yet`);
        return {
          kind: 'refund',
          paymentId: adjustment.transactionId,
          reference: undefined,
          refundedTotal: adjustment.netOfTax,
          amountField: 'data.totals (total − tax)',
          currency: adjustment.currency,
          partId: adjustment.id,
        };
      });
    default:
      return ignore(`${type} is not an event Tandem uses`);
  }
}

export const paddleProvider: BillingProvider = {
  name: 'paddle',
  displayName: 'Paddle',
  setup: {
    where: 'Developer tools → Notifications → New destination (type: URL)',
    events: ['customer.created', 'customer.updated', 'transaction.completed', 'adjustment.created', 'adjustment.updated'],
    secretName: 'secret key',
    secretHint: 'pdl_ntfset_… on the destination (Edit destination)',
    carrier: 'Pass window.tandem.referral to Paddle.js as customData: { tandem_referral } when you open the checkout.',
    headers: { 'paddle-signature': '`ts=…;h1=…` (one h1 per secret during a rotation): HMAC-SHA256 of `{ts}:{raw body}`, 5 minutes' },
    example: {
      event_id: 'evt_01hv8x2aqs8t6gdn1xqk2f7b1w',
      event_type: 'transaction.completed',
      occurred_at: '2026-11-20T10:15:30.412Z',
      data: { id: 'txn_01hv8wptq8987qeep44cyrewp9', status: 'completed', customer_id: 'ctm_01hv8wt8nffez4p2t6typn4a5j', custom_data: { tandem_referral: 'jane' }, currency_code: 'USD', details: { totals: { total: '5880', tax: '980' } } },
    },
    test: 'Developer tools → Simulations sends a signed event of a type you choose to this destination; it is listed below.',
  },
  notConnected: 'Paddle is not connected to this program: save its notification destination secret key first.',
  secret: { pattern: PADDLE_SECRET, words: 'must be a Paddle notification secret key (pdl_ntfset_…)' },
  paymentsNameCustomerById: true,
  verify,
  actionOf,
  amountToMinor: (amount, currency, field) => providerAmountToMinor(amount, currency, field, { displayName: 'Paddle', digits: paddleDigits(currency) }),
  noCredit: 'no tandem_referral in custom_data names an affiliate, and no discount matches a promotional code of the program',
  noPaymentRefunded: 'no recorded transaction matches the adjustment',
};
