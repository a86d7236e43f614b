import type Stripe from 'stripe';
import type { Db, Tx } from '../../db/transaction.ts';
import { inTransaction } from '../../db/transaction.ts';
import { instanceKey } from '../../db/instance-keys.ts';
import { mapPage, pageOf, type Page, type PageRequest } from '../../db/keyset.ts';
import { toIso } from '../../domain/clock.ts';
import { ApiError, invalidField } from '../../domain/errors.ts';
import { fromMinorUnits } from '../../domain/money.ts';
import { stripeAmountToMinor } from './stripe-currencies.ts';
import type { ProgramContext } from '../../domain/program-context.ts';
import { createReferral, getReferral } from '../referrals/referral.service.ts';
import type { Referral } from '../referrals/referral.schema.ts';
import { createSale, findSaleIdOfInvoice, refundSale } from '../sales/sale.service.ts';
import { holdSaleCommission, releaseSaleCommission } from '../ledger/entries.ts';
import { getPromotionalCode } from '../coupons/promotional-code.service.ts';
import type { CreateSaleBody } from '../sales/sale.schema.ts';
import {
  readCharge,
  readCheckoutSession,
  readCustomer,
  readDispute,
  readEnvelope,
  readInvoice,
  readInvoicePayment,
  referralBody,
  saleBody,
  type CheckoutSession,
  type Charge,
  type Credit,
  type Dispute,
  type Invoice,
  type Promotion,
  type Read,
  type StripeCustomer,
  type StripeEnvelope,
} from './stripe-payload.ts';
import {
  countWaitingInvoices,
  expireWaitingInvoicesBefore,
  findDispute,
  insertBillingEventOnce,
  invoiceOfPayment,
  listBillingEvents,
  lockWaitingInvoicesOf,
  recordDisputeState,
  recordPayment,
  setBillingEventOutcome,
  settleBillingEvent,
  takeWaitingInvoicesOf,
  type BillingEventRow,
} from './billing.repository.ts';
import { open, seal } from './sealed-secret.ts';
import { saveStripeSecret, sealedStripeSecretOf } from '../programs/program.service.ts';

// Stripe, connected by one signing secret (issue 20; CONTRACT "Billing providers (Stripe)").
// POST /api/billing/stripe/{programId} verifies each event with the official package (5-minute
// tolerance), turns what it understands into referrals and sales through the same services as
// the API, and stores the event once with its outcome. Its id is claimed first, in the
// transaction of its work, so a redelivery (even to two processes at once) does nothing and a
// failed one leaves no claim. The work is idempotent by Stripe's own ids besides — a customer
// is a referral's referredUserExternalId, an invoice a sale's externalInvoiceId (duplicate_* is
// a success here), a dispute keeps its state (billing_disputes) — so the same invoice under
// another event id records one sale, and a late dispute event changes nothing.

/**
 * The official package, loaded when the first Stripe event arrives: it is large (every API
 * resource of Stripe), and a server whose programs do not use Stripe never needs it (measured:
 * an idle server's RSS 143 → 137 MB).
 */
let stripeClient: Promise<Stripe> | null = null;
const stripe = () => (stripeClient ??= import('stripe').then(({ default: StripeClient }) => new StripeClient('sk_unused_only_webhook_verification')));
const TOLERANCE_SECONDS = 300;
/** An invoice of a customer not referred yet waits this long for the referral. */
const WAITING_MS = 24 * 3_600_000;
/**
 * Invoices of customers not referred yet that one program keeps waiting at most; past it a new
 * one is ignored with the reason. A shop's invoices arrive before their checkout for seconds,
 * so a real program holds a handful; the cap bounds what a flood of invoices of unknown
 * customers leaves behind (docs/security.md, Limits).
 */
export const WAITING_INVOICES_PER_PROGRAM = 10_000;
/** A customer's waiting invoices one referral settles at most (the rest expire). */
const SETTLED_PER_REFERRAL = 100;
/** Waiting invoices the worker's expiry ignores per statement (and transaction). */
export const WAITING_EXPIRY_BATCH = 500;
const EXPIRED_REASON = 'the customer was not referred within 24 hours of the invoice';
const SECRET = /^whsec_[A-Za-z0-9+/=_-]{8,200}$/;

const billingKey = (db: Db) => instanceKey(db, 'billing-secrets');

/** Saves (or replaces) a program's Stripe webhook signing secret, sealed; it is never shown again. */
export async function connectStripe(db: Db, programId: string, secret: string, now: string): Promise<void> {
  if (!SECRET.test(secret)) throw invalidField('#/stripeWebhookSecret', 'must be a Stripe webhook signing secret (whsec_…)');
  await saveStripeSecret(db, programId, seal(await billingKey(db), secret), now);
}

export interface BillingEvent {
  id: string;
  provider: 'stripe';
  type: string;
  receivedAt: string;
  outcome: BillingEventRow['outcome'];
  reason: string | null;
  referralId: string | null;
  saleId: number | null;
}

export function serializeBillingEvent(row: BillingEventRow): BillingEvent {
  return {
    id: row.id,
    provider: row.provider,
    type: row.type,
    receivedAt: toIso(row.created_at),
    outcome: row.outcome,
    reason: row.reason,
    referralId: row.referral_id,
    saleId: row.sale_id === null ? null : Number(row.sale_id),
  };
}

/** A page of the program's billing events: one keyset read, whatever else the program holds. */
export async function getBillingEventPage(db: Db, program: ProgramContext, page: PageRequest): Promise<Page<BillingEvent>> {
  return mapPage(pageOf(await listBillingEvents(db, program.id, page), page), serializeBillingEvent);
}

/**
 * The worker's expiry (maintenance/purge-expired.ts): invoices that waited more than 24 hours
 * before `now` for their customer's referral are ignored with the reason, `batch` at a time —
 * each batch one short statement, and the event loop is let go between two, so requests (and,
 * on SQLite, their turn at the write lock) go on while a large backlog expires. Never run in a
 * request. Returns how many expired and in how many batches.
 */
export async function expireWaitingInvoices(db: Db, now: Date, batch = WAITING_EXPIRY_BATCH): Promise<{ expired: number; batches: number }> {
  const before = new Date(now.getTime() - WAITING_MS).toISOString();
  let expired = 0;
  let batches = 0;
  for (;;) {
    const n = await expireWaitingInvoicesBefore(db, before, EXPIRED_REASON, batch);
    expired += n;
    batches++;
    if (n < batch) return { expired, batches };
    await new Promise((resolve) => setImmediate(resolve));
  }
}

type Outcome = Pick<BillingEventRow, 'outcome' | 'reason' | 'referral_id' | 'sale_id'> & Partial<Pick<BillingEventRow, 'waiting' | 'customer_id'>>;

/** What a waiting invoice keeps to become a sale when its customer is referred. */
interface WaitingInvoice {
  invoiceId: string;
  /** In Stripe's minor units of the program's currency (stripe-currencies.ts converts it). */
  amountPaid: number;
  paidAt: string | null;
}
const ignored = (reason: string): Outcome => ({ outcome: 'ignored', reason, referral_id: null, sale_id: null });

/** The id a 409 duplicate names: recording it again is the success the event asks for. */
function existingIdOf(error: unknown): string | number | undefined {
  return error instanceof ApiError && (error.code === 'duplicate_referral' || error.code === 'duplicate_sale') ? (error as ApiError & { existingId?: string | number }).existingId : undefined;
}

/** The program's promotional code for a Stripe promotion code: by externalId (promo_…), else by its code string. */
async function codeForPromotion(db: Db, program: ProgramContext, promotion: Promotion | null): Promise<string | undefined> {
  if (!promotion) return undefined;
  for (const query of [promotion.id ? { externalId: promotion.id } : null, promotion.code ? { code: promotion.code } : null]) {
    if (!query) continue;
    try {
      return (await getPromotionalCode(db, program, query)).code;
    } catch {
      // not this one
    }
  }
  return undefined;
}

async function creditOf(db: Db, program: ProgramContext, ref: string | undefined, promotion: Promotion | null): Promise<Credit | undefined> {
  if (ref) return { affiliateId: ref };
  const code = await codeForPromotion(db, program, promotion);
  return code === undefined ? undefined : { promoCode: code };
}

async function referCustomer(db: Tx, program: ProgramContext, customer: StripeCustomer, credit: Credit | undefined): Promise<Outcome> {
  if (!credit) return ignored('no tandem_referral (client_reference_id or metadata) names an affiliate, and no promotion code matches a promotional code of the program');
  if (!customer.email) return ignored('the customer has no e-mail');
  const body = referralBody(customer, credit);
  if ('reason' in body) return ignored(body.reason);
  try {
    const referral = await createReferral(db, program, body.value);
    await settleWaitingInvoices(db, program, customer.id, referral.id);
    return { outcome: 'recorded', reason: null, referral_id: referral.id, sale_id: null };
  } catch (error) {
    const existing = existingIdOf(error);
    if (existing !== undefined) return { outcome: 'recorded', reason: 'the customer was already referred', referral_id: String(existing), sale_id: null };
    if (error instanceof ApiError && error.status < 500) return ignored(error.detail);
    throw error;
  }
}

/**
 * The invoices a customer's referral was waiting for: each that arrived within the last 24 hours
 * becomes the referral's sale now, in the referral's transaction. Only this customer's waiting
 * rows are read (by the index on the waiting rows' program and customer); one older than 24
 * hours and not expired yet is left to the worker's expiry.
 */
async function settleWaitingInvoices(tx: Tx, program: ProgramContext, customerId: string, referralId: string): Promise<void> {
  await lockWaitingInvoicesOf(tx, program.id, customerId);
  const since = new Date(program.clock().getTime() - WAITING_MS).toISOString();
  for (const row of await takeWaitingInvoicesOf(tx, program.id, customerId, since, SETTLED_PER_REFERRAL)) {
    const invoice = JSON.parse(row.waiting ?? '{}') as WaitingInvoice;
    await settleBillingEvent(tx, program.id, row.id, await recordInvoiceSale(tx, program, referralId, invoice));
  }
}

/**
 * A referral made through the API or the dashboard (POST or PUT /referrals) with a
 * referredUserExternalId: the Stripe invoices of that customer waiting for it become its sales,
 * in the referral's transaction (app.ts passes this to the referral routes as
 * AppServices.referralMade).
 */
export async function settleWaitingInvoicesOfReferral(tx: Tx, program: ProgramContext, referral: Referral): Promise<void> {
  if (referral.referredUserExternalId) await settleWaitingInvoices(tx, program, referral.referredUserExternalId, referral.id);
}

/** The POST /sales body of a paid invoice (or session) of the referral, by the API's rules; the reason when they refuse it. */
function invoiceSaleBody(program: ProgramContext, referralId: string, invoice: WaitingInvoice, field: string): Read<CreateSaleBody> {
  const amount = stripeAmountToMinor(invoice.amountPaid, program.currency, field);
  if ('reason' in amount) return amount;
  return saleBody({ referralId, totalEarned: fromMinorUnits(amount.minor, program.currency), externalInvoiceId: invoice.invoiceId });
}

async function recordInvoiceSale(db: Db, program: ProgramContext, referralId: string, invoice: WaitingInvoice, field = 'amount_paid'): Promise<Outcome> {
  const body = invoiceSaleBody(program, referralId, invoice, field);
  if ('reason' in body) return ignored(body.reason);
  try {
    const paidAt = invoice.paidAt === null ? undefined : new Date(invoice.paidAt);
    const sale = await createSale(db, program, body.value, { paidAt });
    return { outcome: 'recorded', reason: null, referral_id: referralId, sale_id: sale.id };
  } catch (error) {
    const existing = existingIdOf(error);
    if (existing !== undefined) return { outcome: 'recorded', reason: 'the invoice was already recorded', referral_id: referralId, sale_id: Number(existing) };
    if (error instanceof ApiError && error.status < 500) return ignored(error.detail);
    throw error;
  }
}

async function sellPayment(db: Db, program: ProgramContext, session: CheckoutSession, referralId: string): Promise<Outcome> {
  if ((session.currency ?? '').toUpperCase() !== program.currency) return ignored(`paid in ${(session.currency ?? '?').toUpperCase()}, not the program's ${program.currency}`);
  if (session.paymentIntent) await recordPayment(db, program.id, session.paymentIntent, session.id, program.clock().toISOString());
  return recordInvoiceSale(db, program, referralId, { invoiceId: session.id, amountPaid: session.amountTotal as number, paidAt: session.createdAt }, 'amount_total');
}

/**
 * A dispute holds the sale's unpaid commission (not due) while it is open; lost, the commission
 * is taken back like a full refund; won, it falls due at once. Each dispute keeps its state
 * (billing_disputes): an event older than the one applied, or any event after the close, is
 * ignored — a redelivered or late charge.dispute.created never holds a closed dispute again.
 */
async function disputeOutcome(tx: Tx, program: ProgramContext, closes: boolean, dispute: Dispute): Promise<Outcome> {
  const invoiceId = dispute.paymentIntent ? await invoiceOfPayment(tx, program.id, dispute.paymentIntent) : undefined;
  const saleId = invoiceId ? await findSaleIdOfInvoice(tx, program, invoiceId) : undefined;
  if (!invoiceId || saleId === undefined) return ignored('no recorded sale matches the disputed payment');
  const eventAt = dispute.eventCreatedAt;
  const now = program.clock().toISOString();
  const state = { program_id: program.id, id: dispute.id, sale_id: saleId, status: dispute.status, event_created_at: eventAt, closed_at: closes ? now : null, updated_at: now };
  if (!(await recordDisputeState(tx, state))) {
    const recorded = (await findDispute(tx, program.id, dispute.id))!;
    const recordedAt = toIso(recorded.event_created_at);
    const was = `${recorded.status}${recorded.closed_at === null ? '' : ', closed'}, by an event created ${recordedAt}`;
    return ignored(
      eventAt < recordedAt
        ? `this event of the dispute ${dispute.id}, created ${eventAt}, is older than its state already recorded (${was}): it changes nothing`
        : `the dispute ${dispute.id} is closed already (${was}): this event of it, created ${eventAt}, changes nothing`,
    );
  }
  if (!closes) {
    await holdSaleCommission(tx, program, saleId, 'dispute');
    return { outcome: 'recorded', reason: 'the commission is held while the dispute is open', referral_id: null, sale_id: saleId };
  }
  if (dispute.status === 'lost') {
    try {
      await refundSale(tx, program, { externalInvoiceId: invoiceId }, { upToRefundedMinor: Number.MAX_SAFE_INTEGER });
    } catch (error) {
      if (!(error instanceof ApiError && error.status < 500)) throw error; // already fully refunded
    }
  }
  await releaseSaleCommission(tx, program, saleId, 'dispute');
  return { outcome: 'recorded', reason: dispute.status === 'lost' ? 'the dispute was lost: the commission is taken back' : `the dispute closed (${dispute.status}): the commission is due`, referral_id: null, sale_id: saleId };
}

async function sellInvoice(db: Tx, program: ProgramContext, invoice: Invoice): Promise<Outcome> {
  if (!invoice.amountPaid || (invoice.amountPaid as number) <= 0) return ignored('nothing was paid');
  if (invoice.currency.toUpperCase() !== program.currency) return ignored(`paid in ${invoice.currency.toUpperCase()}, not the program's ${program.currency}`);
  if (!invoice.customerId || !invoice.customer) return ignored('the invoice names no customer');
  const waiting: WaitingInvoice = { invoiceId: invoice.id, amountPaid: invoice.amountPaid as number, paidAt: invoice.paidAt };
  // What the API would refuse of the sale (an amount the program's currency cannot hold, one
  // past its limit) is ignored now, rather than after waiting. The referral is a placeholder.
  const refused = invoiceSaleBody(program, '00000000-0000-4000-8000-000000000000', waiting, 'amount_paid');
  if ('reason' in refused) return ignored(refused.reason);
  // Before 2025-03-31 an invoice names its payment intent: a later refund names only that.
  if (invoice.paymentIntent) await recordPayment(db, program.id, invoice.paymentIntent, invoice.id, program.clock().toISOString());
  let referralId = await referralIdOfCustomer(db, program, invoice.customerId);
  if (referralId === undefined) {
    // A promotion code on the invoice credits its affiliate: the customer becomes their referral.
    const byCode = await creditOf(db, program, undefined, invoice.promotion);
    if (byCode) {
      const referred = await referCustomer(db, program, invoice.customer, byCode);
      if (referred.outcome === 'recorded') return recordInvoiceSale(db, program, referred.referral_id!, waiting);
    }
    // Stripe sends the first invoice before the checkout's customer as often as after. Looked
    // for again under the customer's lock: a referral committed meanwhile is seen, and one
    // made after this waits for our commit and then finds the invoice (settleWaitingInvoices).
    await lockWaitingInvoicesOf(db, program.id, invoice.customerId);
    referralId = await referralIdOfCustomer(db, program, invoice.customerId);
  }
  if (referralId !== undefined) return recordInvoiceSale(db, program, referralId, waiting);
  if ((await countWaitingInvoices(db, program.id, WAITING_INVOICES_PER_PROGRAM)) >= WAITING_INVOICES_PER_PROGRAM) {
    return ignored(`the customer ${invoice.customerId} is not referred, and ${WAITING_INVOICES_PER_PROGRAM.toLocaleString('en-US')} invoices of customers not referred yet are already waiting (the most a program keeps): this one is not kept`);
  }
  return { outcome: 'waiting', reason: `waiting up to 24 hours for the customer ${invoice.customerId} to be referred`, referral_id: null, sale_id: null, waiting: JSON.stringify(waiting), customer_id: invoice.customerId };
}

async function referralIdOfCustomer(db: Db, program: ProgramContext, customerId: string): Promise<string | undefined> {
  try {
    return (await getReferral(db, program, { externalId: customerId })).id;
  } catch (error) {
    if (error instanceof ApiError && error.code === 'not_found') return undefined;
    throw error;
  }
}

/** A charge's refunds: its sale (by invoice, or by the payment the invoice was paid with) refunded up to Stripe's cumulative amount. */
async function refundCharge(db: Db, program: ProgramContext, charge: Charge): Promise<Outcome> {
  if (charge.currency.toUpperCase() !== program.currency) return ignored(`refunded in ${charge.currency.toUpperCase()}, not the program's ${program.currency}`);
  let invoiceId = charge.invoiceId;
  if (!invoiceId && charge.paymentIntent) invoiceId = await invoiceOfPayment(db, program.id, charge.paymentIntent);
  if (!invoiceId) return ignored('no recorded invoice matches the charge');
  const refunded = stripeAmountToMinor(charge.amountRefunded, program.currency, 'amount_refunded');
  if ('reason' in refunded) return ignored(refunded.reason);
  try {
    const sale = await refundSale(db, program, { externalInvoiceId: invoiceId }, { upToRefundedMinor: refunded.minor });
    return { outcome: 'recorded', reason: null, referral_id: sale.referralId, sale_id: sale.id };
  } catch (error) {
    if (error instanceof ApiError && error.status < 500) return ignored(error.code === 'not_found' ? `no sale is recorded for the invoice ${invoiceId}` : error.detail);
    throw error;
  }
}

/** Runs `work` on what `read` made of the event, or ignores the event with the reason it could not be read. */
function withRead<T>(read: Read<T>, work: (value: T) => Promise<Outcome>): Promise<Outcome> {
  return 'reason' in read ? Promise.resolve(ignored(read.reason)) : work(read.value);
}

/** An event's work, in the transaction that claimed its id; every value read by the API's input rules (stripe-payload.ts). */
async function handle(db: Tx, program: ProgramContext, { type, event }: StripeEnvelope): Promise<Outcome> {
  switch (type) {
    case 'customer.created':
    case 'customer.updated':
      return withRead(readCustomer(event), async ({ customer, referral }) => referCustomer(db, program, customer, await creditOf(db, program, referral, null)));
    case 'checkout.session.completed':
      return withRead(readCheckoutSession(event), async (session) => {
        if (!session.customer) return ignored('the session has no customer');
        const referred = await referCustomer(db, program, session.customer, await creditOf(db, program, session.referral, session.promotion));
        // A one-time payment (no invoice) is the sale itself, keyed by the session.
        if (referred.outcome === 'recorded' && session.isPaidPayment) return sellPayment(db, program, session, referred.referral_id!);
        return referred;
      });
    case 'invoice.paid':
      return withRead(readInvoice(event), (invoice) => sellInvoice(db, program, invoice));
    case 'charge.refunded':
      return withRead(readCharge(event), (charge) => refundCharge(db, program, charge));
    case 'charge.dispute.created':
    case 'charge.dispute.closed':
      return withRead(readDispute(event), (dispute) => disputeOutcome(db, program, type === 'charge.dispute.closed', dispute));
    case 'invoice_payment.paid':
      // From 2025-03-31 on: which payment intent paid which invoice (a charge no longer says).
      return withRead(readInvoicePayment(event), async ({ invoiceId, paymentIntent }) => {
        if (!invoiceId || !paymentIntent) return ignored('the payment names no invoice or payment intent');
        await recordPayment(db, program.id, paymentIntent, invoiceId, program.clock().toISOString());
        return { outcome: 'recorded', reason: `payment ${paymentIntent} of ${invoiceId} noted for refunds`, referral_id: null, sale_id: null };
      });
    default:
      return ignored(`${type} is not an event Tandem uses`);
  }
}

/**
 * A delivery from Stripe, verified: its signature by the program's secret (a missing or bad one,
 * or none saved, is a 400 and nothing is recorded), then the id and type it will be stored
 * under. What counts against the program's limit of events per minute is only what passes here
 * (billing.routes.ts), so nobody without the secret can spend a program's limit.
 */
export async function verifyStripeEvent(db: Db, program: ProgramContext, rawBody: Buffer, signature: string | undefined): Promise<StripeEnvelope> {
  const sealed = await sealedStripeSecretOf(db, program.id);
  if (!sealed) throw new ApiError('bad_request', 'Stripe is not connected to this program: save its webhook signing secret first.');
  const client = await stripe();
  let parsed: unknown;
  try {
    parsed = client.webhooks.constructEvent(rawBody, signature ?? '', open(await billingKey(db), sealed), TOLERANCE_SECONDS);
  } catch {
    throw new ApiError('bad_request', 'The Stripe-Signature header is missing, or does not match this program\'s signing secret within 5 minutes.');
  }
  // Signed, but an id or type the event could not be stored under: refused, nothing recorded.
  const envelope = readEnvelope(parsed);
  if ('reason' in envelope) throw new ApiError('bad_request', envelope.reason);
  return envelope.value;
}

/**
 * A verified event handled and stored once; answers whether it was new. Its work reads only
 * what the event names (a customer, an invoice, a payment): never the program's other waiting
 * invoices or history.
 */
export async function recordStripeEvent(db: Db, program: ProgramContext, event: StripeEnvelope): Promise<{ received: true; duplicate: boolean }> {
  // The id is claimed first, in the transaction of the event's work (the services' own
  // transactions run inside it, as savepoints): a redelivery finds the claim and does nothing,
  // and work that fails takes its claim back with it, so Stripe's retry does it again.
  const claimed = await inTransaction(db, async (tx) => {
    const row = { program_id: program.id, id: event.id, provider: 'stripe' as const, type: event.type, created_at: program.clock().toISOString(), ...ignored('being handled') };
    if (!(await insertBillingEventOnce(tx, row))) return false;
    await setBillingEventOutcome(tx, program.id, event.id, await handle(tx, program, event));
    return true;
  });
  return { received: true, duplicate: !claimed };
}

/** The Stripe section of the dashboard: whether a secret is saved, and the newest events. */
export async function getStripeStatus(db: Db, program: ProgramContext, shown: number): Promise<{ connected: boolean; events: BillingEvent[] }> {
  const [sealed, events] = await Promise.all([sealedStripeSecretOf(db, program.id), getBillingEventPage(db, program, { limit: shown })]);
  return { connected: Boolean(sealed), events: events.items };
}
