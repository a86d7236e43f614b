import { ApiError } from '../../../../domain/errors.ts';
import { hmacSha256Hex, sameSecret } from '../../../../domain/constant-time.ts';
import { cardProcessorDigits, netOfTaxPart, ignore, parseEventBody, providerAmountToMinor } from '../../billing-input.ts';
import type { BillingAction, BillingEnvelope, BillingProvider, Delivery } from '../../billing-provider.ts';
import { readEnvelope, readPayment, type LemonSqueezyPayment } from './lemonsqueezy-payload.ts';

// Lemon Squeezy (CONTRACT "Billing providers beyond Stripe"; docs.lemonsqueezy.com/help/webhooks),
// connected by the webhook's signing secret. Its checkout's `checkout[custom][tandem_referral]`
// comes back in every event's meta.custom_data, and every payment names its customer's e-mail:
// an order (order_created) or a subscription's renewal (subscription_payment_success; the first
// payment of a subscription is its order's, so an invoice billed for `initial` is left to it)
// is the sale, a refund (order_refunded, subscription_payment_refunded) takes back the part of
// it refunded by the cumulative refunded_amount. Lemon Squeezy numbers no event: the business
// keys make the id (lemonsqueezy-payload.ts).

/** Lemon Squeezy's signing secret: what the merchant typed, 6 to 40 characters. */
const LEMONSQUEEZY_SECRET = /^[\x21-\x7e]{6,40}$/;
const BAD_SIGNATURE = "The X-Signature header is missing, or does not match this program's signing secret.";

/** `X-Signature`: hex HMAC-SHA256 of the raw body under the signing secret, compared in constant time. */
async function verify({ rawBody, headers }: Delivery, secret: string): Promise<BillingEnvelope> {
  const signature = headers['x-signature'];
  if (typeof signature !== 'string' || !sameSecret(hmacSha256Hex(secret, rawBody), signature.trim().toLowerCase())) throw new ApiError('bad_request', BAD_SIGNATURE);
  const parsed = parseEventBody(rawBody);
  const envelope = readEnvelope(parsed);
  if ('reason' in envelope) throw new ApiError('bad_request', envelope.reason);
  return envelope.value;
}


/** What a payment's refund takes back: the part of its net-of-tax amount the refunded total is of its total. */
function refundedNetOfTax(payment: LemonSqueezyPayment): number {
  const refunded = payment.refundedAmount ?? (payment.status === 'refunded' ? payment.total : 0);
  return netOfTaxPart(refunded, payment.total, payment.total - payment.tax);
}

function payAction(payment: LemonSqueezyPayment): BillingAction {
  return {
    kind: 'pay',
    customerId: payment.customerId,
    customer: payment.customerId === undefined ? undefined : { id: payment.customerId, email: payment.email, name: payment.name, since: payment.createdAt },
    referral: payment.referral,
    discount: null,
    payment: { id: payment.id, amount: payment.total - payment.tax, amountField: 'data.attributes (total − tax)', currency: payment.currency, paidAt: payment.createdAt },
  };
}

function actionOf({ type, event }: BillingEnvelope): BillingAction {
  if (!['order_created', 'subscription_payment_success', 'order_refunded', 'subscription_payment_refunded'].includes(type)) return ignore(`${type} is not an event Tandem uses`);
  const read = readPayment(event);
  if ('reason' in read) return ignore(read.reason);
  const payment = read.value;
  switch (type) {
    case 'order_created':
      return payment.status === 'paid' ? payAction(payment) : ignore(`the order is ${payment.status}, not paid`);
    case 'subscription_payment_success':
      if (payment.billingReason === 'initial') return ignore("a subscription's first payment is its order's (order_created)");
      return payment.status === 'paid' ? payAction(payment) : ignore(`the invoice is ${payment.status}, not paid`);
    default:
      return { kind: 'refund', paymentId: payment.id, reference: undefined, refundedTotal: refundedNetOfTax(payment), amountField: 'data.attributes.refunded_amount (net of tax)', currency: payment.currency };
  }
}

export const lemonSqueezyProvider: BillingProvider = {
  name: 'lemonsqueezy',
  displayName: 'Lemon Squeezy',
  setup: {
    where: 'Settings → Webhooks → + (add a webhook)',
    events: ['order_created', 'order_refunded', 'subscription_payment_success', 'subscription_payment_refunded'],
    secretName: 'signing secret',
    secretHint: 'the 6 to 40 characters you typed as the webhook’s signing secret',
    carrier: 'Add checkout[custom][tandem_referral]=… (window.tandem.referral) to the checkout link, or checkout_data.custom.tandem_referral when you create a checkout.',
    headers: { 'x-signature': 'hex HMAC-SHA256 of the raw body under the signing secret' },
    example: {
      meta: { event_name: 'order_created', custom_data: { tandem_referral: 'jane' } },
      data: { type: 'orders', id: '1', attributes: { customer_id: 1, user_name: 'Darlene Daugherty', user_email: 'darlene@example.org', currency: 'USD', status: 'paid', total: 1199, tax: 200, created_at: '2026-11-20T10:15:19.000000Z' } },
    },
    test: 'A webhook’s page in Lemon Squeezy lists its recent deliveries and resends one; each is listed below with what Tandem did.',
  },
  notConnected: 'Lemon Squeezy is not connected to this program: save its webhook signing secret first.',
  secret: { pattern: LEMONSQUEEZY_SECRET, words: 'must be the signing secret of your Lemon Squeezy webhook: 6 to 40 characters, no spaces' },
  paymentsNameCustomerById: false,
  verify,
  declaredMode: ({ event }) => {
    const meta = event.meta as { test_mode?: unknown } | undefined;
    return meta?.test_mode === true ? 'test' : meta?.test_mode === false ? 'live' : undefined;
  },
  actionOf,
  amountToMinor: (amount, currency, field) => providerAmountToMinor(amount, currency, field, { displayName: 'Lemon Squeezy', digits: cardProcessorDigits(currency) }),
  noCredit: 'no tandem_referral in meta.custom_data names an affiliate',
  noPaymentRefunded: 'no recorded order or invoice matches the refund',
};
