import type Stripe from 'stripe';
import { ApiError } from '../../../../domain/errors.ts';
import { ignore, withRead } from '../../billing-input.ts';
import type { BillingAction, BillingEnvelope, BillingProvider, Delivery } from '../../billing-provider.ts';
import { stripeAmountToMinor } from './stripe-currencies.ts';
import { readCharge, readCheckoutSession, readCustomer, readDispute, readEnvelope, readInvoice, readInvoicePayment } from './stripe-payload.ts';

// Stripe, connected by one signing secret (issue 20; CONTRACT "Billing providers (Stripe)"): each
// delivery verified with the official package (5-minute tolerance), each event read into the
// action it asks (billing-provider.ts). Both of Stripe's API shapes are read: before 2025-03-31
// an invoice names its payment intent and a charge its invoice; from then on neither does, and
// `invoice_payment.paid` says which payment intent paid which invoice.

/**
 * The official package, loaded when the first Stripe event arrives: it is large (every API
 * resource of Stripe), and a server whose programs do not use Stripe never needs it (measured:
 * an idle server's RSS 143 → 137 MB).
 */
let stripeClient: Promise<Stripe> | null = null;
const stripe = () => (stripeClient ??= import('stripe').then(({ default: StripeClient }) => new StripeClient('sk_unused_only_webhook_verification')));
const TOLERANCE_SECONDS = 300;

/** A Stripe webhook endpoint's signing secret, as Stripe issues it. */
const STRIPE_SECRET = /^whsec_[A-Za-z0-9+/=_-]{8,200}$/;



function actionOf({ type, event }: BillingEnvelope): BillingAction {
  switch (type) {
    case 'customer.created':
    case 'customer.updated':
      return withRead(readCustomer(event), ({ customer, referral }) => ({ kind: 'refer', customer, referral, discount: null }));
    case 'checkout.session.completed':
      return withRead(readCheckoutSession(event), (session) => {
        if (!session.customer) return ignore('the session has no customer');
        // A one-time payment (no invoice) is the sale itself, keyed by the session.
        const payment = session.isPaidPayment
          ? { id: session.id, amount: session.amountTotal, amountField: 'amount_total', currency: session.currency, paidAt: session.createdAt, reference: session.paymentIntent }
          : undefined;
        return { kind: 'refer', customer: session.customer, referral: session.referral, discount: session.promotion, payment };
      });
    case 'invoice.paid':
      return withRead(readInvoice(event), (invoice) => ({
        kind: 'pay',
        customerId: invoice.customerId,
        customer: invoice.customer,
        discount: invoice.promotion,
        // Before 2025-03-31 an invoice names its payment intent: a later refund names only that.
        payment: { id: invoice.id, amount: invoice.amountPaid, amountField: 'amount_paid', currency: invoice.currency, paidAt: invoice.paidAt, reference: invoice.paymentIntent },
      }));
    case 'charge.refunded':
      return withRead(readCharge(event), (charge) => ({
        kind: 'refund',
        paymentId: charge.invoiceId,
        reference: charge.paymentIntent,
        refundedTotal: charge.amountRefunded,
        amountField: 'amount_refunded',
        currency: charge.currency,
      }));
    case 'charge.dispute.created':
    case 'charge.dispute.closed':
      return withRead(readDispute(event), (dispute) => ({
        kind: 'dispute',
        id: dispute.id,
        reference: dispute.paymentIntent,
        status: dispute.status,
        closes: type === 'charge.dispute.closed',
        eventCreatedAt: dispute.eventCreatedAt,
      }));
    case 'invoice_payment.paid':
      // From 2025-03-31 on: which payment intent paid which invoice (a charge no longer says).
      return withRead(readInvoicePayment(event), ({ invoiceId, paymentIntent }) =>
        !invoiceId || !paymentIntent ? ignore('the payment names no invoice or payment intent') : { kind: 'note-payment', paymentId: invoiceId, reference: paymentIntent },
      );
    default:
      return ignore(`${type} is not an event Tandem uses`);
  }
}

/**
 * A delivery verified by the program's signing secret (`Stripe-Signature`, 5 minutes), then the
 * id and type it will be stored under: a signed event whose id or type could not be stored is
 * refused as well. Either refusal is a 400 and records nothing.
 */
async function verify({ rawBody, headers }: Delivery, secret: string): Promise<BillingEnvelope> {
  const signature = headers['stripe-signature'];
  const client = await stripe();
  let parsed: unknown;
  try {
    parsed = client.webhooks.constructEvent(rawBody, typeof signature === 'string' ? signature : '', secret, TOLERANCE_SECONDS);
  } catch {
    throw new ApiError('bad_request', "The Stripe-Signature header is missing, or does not match this program's signing secret within 5 minutes.");
  }
  const envelope = readEnvelope(parsed);
  if ('reason' in envelope) throw new ApiError('bad_request', envelope.reason);
  return envelope.value;
}

export const stripeProvider: BillingProvider = {
  name: 'stripe',
  displayName: 'Stripe',
  setup: {
    where: 'Developers → Webhooks → Add destination (or Add endpoint), Webhook endpoint',
    events: ['checkout.session.completed', 'customer.created', 'customer.updated', 'invoice.paid', 'invoice_payment.paid', 'charge.refunded', 'charge.dispute.created', 'charge.dispute.closed'],
    secretName: 'signing secret',
    secretHint: 'whsec_… on the endpoint’s page',
    carrier: 'Pass window.tandem.referral to Checkout as client_reference_id (the tracking tag does it for Payment Links and pricing tables), or as metadata.tandem_referral on the customer.',
    headers: { 'stripe-signature': "Stripe's signature of the raw body (`t=…,v1=…`), 5 minutes" },
    example: {
      id: 'evt_1QxLm2Ab3cD4eF5gH6iJ7kL8',
      object: 'event',
      api_version: '2025-03-31.basil',
      created: 1764062402,
      type: 'invoice.paid',
      data: { object: { id: 'in_1QxLm2Ab3cD4eF5g', object: 'invoice', customer: 'cus_RkT9wQ2mZ8aB1c', currency: 'usd', amount_paid: 4999, status_transitions: { paid_at: 1764062400 } } },
    },
    test: 'stripe listen --forward-to this URL (Stripe CLI) forwards events signed with the secret it prints: save that one while you try it; each event is listed below with what Tandem did.',
  },
  notConnected: 'Stripe is not connected to this program: save its webhook signing secret first.',
  secret: { pattern: STRIPE_SECRET, words: 'must be a Stripe webhook signing secret (whsec_…)' },
  paymentsNameCustomerById: false,
  verify,
  declaredMode: ({ event }) => (event.livemode === false ? 'test' : event.livemode === true ? 'live' : undefined),
  actionOf,
  amountToMinor: stripeAmountToMinor,
  noCredit: 'no tandem_referral (client_reference_id or metadata) names an affiliate, and no promotion code matches a promotional code of the program',
  noPaymentRefunded: 'no recorded invoice matches the charge',
};
