import { createHmac } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import { ApiError } from '../../../../domain/errors.ts';
import { sameSecret } from '../../../../domain/constant-time.ts';
import { cardProcessorDigits, ID_PATTERN, ignore, parseEventBody, providerAmountToMinor, refusal, withRead } from '../../billing-input.ts';
import type { BillingAction, BillingEnvelope, BillingProvider, Delivery } from '../../billing-provider.ts';
import { EventType, readCustomer, readOrder } from './polar-payload.ts';

// Polar (CONTRACT "Billing providers beyond Stripe"; polar.sh/docs/integrate/webhooks), connected
// by its webhook secret. Deliveries follow Standard Webhooks, keyed — as Polar's SDK keys them —
// by the secret's own bytes. An order carries its checkout's metadata and its customer with the
// e-mail: order.paid is the sale (net_amount: after discounts, before tax), order.refunded the
// refund by its cumulative refunded_amount (before tax); a customer's metadata refers them too.

/** Polar's webhook secret (polar_whs_… and older ones): letters, digits, _ - + / =. */
const POLAR_SECRET = /^[A-Za-z0-9_+/=-]{16,200}$/;
const TOLERANCE_SECONDS = 300;
const BAD_SIGNATURE = "The webhook-id, webhook-timestamp or webhook-signature header is missing, or does not match this program's Polar secret within 5 minutes.";
const MessageId = Type.String({ minLength: 1, maxLength: 200, pattern: ID_PATTERN });

const header = (headers: Delivery['headers'], name: string) => (typeof headers[name] === 'string' ? (headers[name] as string) : undefined);

/**
 * Standard Webhooks: `webhook-signature` holds `v1,<base64>` entries (several during a secret
 * rotation); each is HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}`, keyed by the
 * secret's UTF-8 bytes as Polar's SDK does; the timestamp within 5 minutes of now either way.
 */
async function verify({ rawBody, headers }: Delivery, secret: string): Promise<BillingEnvelope> {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures || !/^\d{1,12}$/.test(timestamp) || signatures.length > 4000) throw new ApiError('bad_request', BAD_SIGNATURE);
  // Real time, as Polar signs: a program's clock (a test clock) never widens the window.
  // eslint-disable-next-line no-restricted-syntax
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > TOLERANCE_SECONDS) throw new ApiError('bad_request', BAD_SIGNATURE);
  const expected = createHmac('sha256', Buffer.from(secret, 'utf8')).update(Buffer.concat([Buffer.from(`${id}.${timestamp}.`), rawBody])).digest('base64');
  const given = signatures.split(' ').filter((entry) => entry.startsWith('v1,')).map((entry) => entry.slice(3));
  if (!given.some((signature) => sameSecret(expected, signature))) throw new ApiError('bad_request', BAD_SIGNATURE);
  if (refusal(MessageId, id, ['#']) !== null) throw new ApiError('bad_request', 'The webhook-id must be 1 to 200 characters without control characters.');
  const event = parseEventBody(rawBody);
  if (refusal(EventType, event.type, ['#']) !== null) throw new ApiError('bad_request', "The event's type must be 1 to 200 characters without control characters.");
  // Polar numbers each message by webhook-id (the same on every retry of it).
  return { id, type: event.type as string, event };
}


function actionOf({ type, event }: BillingEnvelope): BillingAction {
  switch (type) {
    case 'customer.created':
    case 'customer.updated':
      return withRead(readCustomer(event), ({ customer, referral }) => ({ kind: 'refer', customer, referral, discount: null }));
    case 'order.paid':
      return withRead(readOrder(event), (order) =>
        !order.paid
          ? ignore(`the order is ${order.status}, not paid`)
          : {
              kind: 'pay',
              customerId: order.customer.id,
              customer: order.customer,
              referral: order.referral,
              discount: order.discount,
              payment: { id: order.id, amount: order.netAmount, amountField: 'data.net_amount', currency: order.currency, paidAt: order.createdAt },
            },
      );
    case 'order.refunded':
      return withRead(readOrder(event), (order) => ({
        kind: 'refund',
        paymentId: order.id,
        reference: undefined,
        refundedTotal: order.refundedAmount,
        amountField: 'data.refunded_amount',
        currency: order.currency,
      }));
    default:
      return ignore(`${type} is not an event Tandem uses`);
  }
}

export const polarProvider: BillingProvider = {
  name: 'polar',
  displayName: 'Polar',
  setup: {
    where: 'Settings → Webhooks → Add Endpoint (format: Raw)',
    events: ['order.paid', 'order.refunded', 'customer.created', 'customer.updated'],
    secretName: 'webhook secret',
    secretHint: 'the secret Polar shows for the endpoint',
    carrier: 'Pass window.tandem.referral as metadata: { tandem_referral } when you create the checkout (or on the customer).',
    headers: {
      'webhook-id': 'the message id (the billing event id)',
      'webhook-timestamp': 'seconds since 1970, within 5 minutes',
      'webhook-signature': '`v1,<base64>` entries: HMAC-SHA256 of `{id}.{timestamp}.{raw body}` keyed by the secret',
    },
    example: {
      type: 'order.paid',
      timestamp: '2026-11-20T10:15:31.204Z',
      data: { id: '3f9b8f47-5b2e-4f64-8d2a-6c1f0b9a7e21', status: 'paid', currency: 'usd', net_amount: 4900, metadata: { tandem_referral: 'jane' }, created_at: '2026-11-20T10:15:21.102Z', customer: { id: '9a6c2f04-0d3b-4b8e-a1c5-2f7e8d9b0c13', email: 'pat@example.org', name: 'Pat Payer' } },
    },
    test: 'An endpoint’s deliveries in Polar can be redelivered; each is listed below with what Tandem did.',
  },
  notConnected: 'Polar is not connected to this program: save its webhook secret first.',
  secret: { pattern: POLAR_SECRET, words: 'must be the secret of your Polar webhook endpoint (polar_whs_…)' },
  paymentsNameCustomerById: false,
  verify,
  actionOf,
  amountToMinor: (amount, currency, field) => providerAmountToMinor(amount, currency, field, { displayName: 'Polar', digits: cardProcessorDigits(currency) }),
  noCredit: 'no tandem_referral in the metadata of the order or its customer names an affiliate, and no discount matches a promotional code of the program',
  noPaymentRefunded: 'no recorded order matches the refund',
};
