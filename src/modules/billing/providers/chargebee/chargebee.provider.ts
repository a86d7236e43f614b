import { ApiError } from '../../../../domain/errors.ts';
import { sameSecret } from '../../../../domain/constant-time.ts';
import { cardProcessorDigits, netOfTaxPart, ignore, parseEventBody, providerAmountToMinor, withRead } from '../../billing-input.ts';
import type { BillingAction, BillingEnvelope, BillingProvider, Delivery } from '../../billing-provider.ts';
import { readCustomerEvent, readEnvelope, readPayment } from './chargebee-payload.ts';

// Chargebee (CONTRACT "Billing providers beyond Stripe"; chargebee.com/docs/2.0/webhook_settings),
// connected by the HTTP Basic credentials its webhook sends (`user:password`, compared in
// constant time; Chargebee signs nothing else). A customer's custom field cf_tandem_referral (or
// meta_data.tandem_referral) refers them; payment_succeeded makes the invoice it pays a sale (its
// total net of tax), payment_refunded takes back each refund transaction once, the part of the
// invoice net of tax its amount is of the invoice's total.

/** `user:password` as typed in Chargebee's webhook settings. */
const CHARGEBEE_SECRET = /^[^:\s]{1,100}:\S{8,200}$/;
const BAD_CREDENTIALS = "The Authorization header is missing, or does not hold this program's Chargebee webhook credentials.";

/** HTTP Basic: the decoded `user:password` compared in constant time with the saved one. */
async function verify({ rawBody, headers }: Delivery, secret: string): Promise<BillingEnvelope> {
  const authorization = headers.authorization;
  const match = typeof authorization === 'string' && authorization.length <= 1000 ? /^Basic ([A-Za-z0-9+/=]+)$/i.exec(authorization.trim()) : null;
  if (!match || !sameSecret(secret, Buffer.from(match[1] ?? '', 'base64').toString('utf8'))) throw new ApiError('bad_request', BAD_CREDENTIALS);
  const parsed = parseEventBody(rawBody);
  const envelope = readEnvelope(parsed);
  if ('reason' in envelope) throw new ApiError('bad_request', envelope.reason);
  return envelope.value;
}


function actionOf({ type, event }: BillingEnvelope): BillingAction {
  switch (type) {
    case 'customer_created':
    case 'customer_changed':
      return withRead(readCustomerEvent(event), ({ customer, referral }) => ({ kind: 'refer', customer, referral, discount: null }));
    case 'payment_succeeded':
      return withRead(readPayment(event), (p) =>
        p.transactionStatus !== undefined && p.transactionStatus !== 'success'
          ? ignore(`the transaction is ${p.transactionStatus}, not success`)
          : {
              kind: 'pay',
              customerId: p.customer.customer.id,
              customer: p.customer.customer,
              referral: p.customer.referral,
              discount: p.discount,
              payment: { id: p.invoiceId, amount: p.netOfTax, amountField: 'content.invoice (total − tax)', currency: p.currency, paidAt: p.paidAt },
            },
      );
    case 'payment_refunded':
      return withRead(readPayment(event), (p) => ({
        kind: 'refund',
        paymentId: p.invoiceId,
        reference: undefined,
        // The refund's part of the invoice, net of tax in the invoice's proportion.
        refundedTotal: netOfTaxPart(p.transactionAmount, p.total, p.netOfTax),
        amountField: 'content.transaction.amount (net of tax)',
        currency: p.currency,
        partId: p.transactionId,
      }));
    default:
      return ignore(`${type} is not an event Tandem uses`);
  }
}

export const chargebeeProvider: BillingProvider = {
  name: 'chargebee',
  displayName: 'Chargebee',
  setup: {
    where: 'Settings → Configure Chargebee → Webhooks → Add Webhook, with “Protect webhook URL with basic authentication” on',
    events: ['customer_created', 'customer_changed', 'payment_succeeded', 'payment_refunded'],
    secretName: 'user name and password',
    secretHint: 'as user:password, exactly as typed in the webhook',
    carrier: 'Add a customer custom field tandem_referral (API name cf_tandem_referral) filled from window.tandem.referral, or set meta_data.tandem_referral on the customer.',
    headers: { authorization: 'HTTP Basic: the user name and password of the webhook' },
    example: {
      id: 'ev_16BPgETyVrQbiGhA',
      occurred_at: 1763633721,
      event_type: 'payment_succeeded',
      content: {
        transaction: { id: 'txn_16BPgETyVrQbiIhB', amount: 5880, currency_code: 'USD', date: 1763633721, status: 'success' },
        invoice: { id: 'INV-2026-0042', currency_code: 'USD', total: 5880, tax: 980 },
        customer: { id: '16BPgETyVrQbiFgZ', email: 'pat@example.org', first_name: 'Pat', last_name: 'Payer', cf_tandem_referral: 'jane' },
      },
    },
    test: 'The webhook’s Test Webhook button sends a sample event; it is listed below with what Tandem did.',
  },
  notConnected: "Chargebee is not connected to this program: save its webhook's user name and password first.",
  secret: { pattern: CHARGEBEE_SECRET, words: "must be the webhook's basic authentication as user:password (a password of 8 characters or more, no spaces)" },
  paymentsNameCustomerById: false,
  verify,
  actionOf,
  amountToMinor: (amount, currency, field) => providerAmountToMinor(amount, currency, field, { displayName: 'Chargebee', digits: cardProcessorDigits(currency) }),
  noCredit: "no cf_tandem_referral or meta_data.tandem_referral on the customer names an affiliate, and no coupon matches a promotional code of the program",
  noPaymentRefunded: 'no recorded invoice matches the refund',
};
