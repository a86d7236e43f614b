import type { Db, Tx } from '../../db/transaction.ts';
import { inTransaction } from '../../db/transaction.ts';
import { instanceKey } from '../../db/instance-keys.ts';
import { mapPage, pageOf, type Page, type PageRequest } from '../../db/keyset.ts';
import { toIso } from '../../domain/clock.ts';
import { ApiError, invalidField } from '../../domain/errors.ts';
import { fromMinorUnits } from '../../domain/money.ts';
import type { ProgramContext } from '../../domain/program-context.ts';
import { createReferral, getReferral } from '../referrals/referral.service.ts';
import type { Referral } from '../referrals/referral.schema.ts';
import { createSale, findSaleIdOfInvoice, refundSale } from '../sales/sale.service.ts';
import { holdSaleCommission, releaseSaleCommission } from '../ledger/entries.ts';
import { getPromotionalCode } from '../coupons/promotional-code.service.ts';
import type { CreateSaleBody } from '../sales/sale.schema.ts';
import { keptCustomer, reasonOf, referralBody, saleBody, type Credit } from './billing-input.ts';
import type { BillingAction, BillingCustomer, BillingEnvelope, BillingMode, BillingProvider, Delivery, DiscountCode, Payment, Read } from './billing-provider.ts';
import { BILLING_PROVIDERS, billingProviderNamed } from './providers/index.ts';
import {
  claimRefundPart,
  countWaitingInvoices,
  deleteBillingConnection,
  expireWaitingInvoicesBefore,
  findBillingConnectionsTo,
  findBillingCustomer,
  findDispute,
  findWaitingOf,
  insertBillingEventOnce,
  invoiceOfPayment,
  listBillingConnections,
  listBillingEvents,
  lockWaitingInvoicesOf,
  recordDisputeState,
  recordPayment,
  releaseRefundPart,
  rememberBillingCustomer,
  saveBillingConnection,
  setBillingEventOutcome,
  settleBillingEvent,
  takeWaitingInvoicesOf,
  touchBillingConnection,
  type BillingConnectionRow,
  type BillingEventRow,
} from './billing.repository.ts';
import { open, seal } from './sealed-secret.ts';

// The billing providers' events applied (issue 20, issue 32; CONTRACT "Billing providers").
// POST /api/billing/{provider}/{programId} has the provider verify the delivery and read it into
// an action (billing-provider.ts); this turns the action into referrals and sales through the
// same services as the API, and stores the event once with its outcome. Its id is claimed first,
// in the transaction of its work, so a redelivery (even to two processes at once) does nothing
// and a failed one leaves no claim. The work is idempotent by the provider's own ids besides — a
// customer is a referral's referredUserExternalId, a payment a sale's externalInvoiceId
// (duplicate_* is a success here), a dispute keeps its state (billing_disputes) — so the same
// payment under another event id records one sale, and a late dispute event changes nothing.

/** A payment of a customer not referred yet waits this long for the referral. */
const WAITING_MS = 24 * 3_600_000;
/**
 * Payments of customers not referred yet that one program keeps waiting at most; past it a new
 * one is ignored with the reason. A shop's payments arrive before their checkout for seconds,
 * so a real program holds a handful; the cap bounds what a flood of payments of unknown
 * customers leaves behind (docs/security.md, Limits).
 */
export const WAITING_INVOICES_PER_PROGRAM = 10_000;
/** A customer's waiting payments one referral settles at most (the rest expire); as many are read for a referral one of them carries. */
const SETTLED_PER_REFERRAL = 100;
/** Waiting payments the worker's expiry ignores per statement (and transaction). */
export const WAITING_EXPIRY_BATCH = 500;
const EXPIRED_REASON = 'the customer was not referred within 24 hours of the payment';

const billingKey = (db: Db) => instanceKey(db, 'billing-secrets');

/** A program's connection to a provider as `tandem billing list` and the dashboard show it: never the secret. */
export interface BillingConnection {
  provider: string;
  mode: BillingConnectionRow['mode'];
  connectedAt: string;
  lastEventAt: string | null;
}

const serializeConnection = (row: BillingConnectionRow): BillingConnection => ({
  provider: row.provider,
  mode: row.mode,
  connectedAt: toIso(row.connected_at),
  lastEventAt: row.last_event_at === null ? null : toIso(row.last_event_at),
});

/** The provider of `name`, or a 422 naming the field and the providers there are. */
export function billingProviderOf(name: string, field = '#/provider'): BillingProvider {
  const provider = billingProviderNamed(name);
  if (!provider) throw invalidField(field, `must be one of: ${BILLING_PROVIDERS.map((p) => p.name).join(', ')}`);
  return provider;
}

/**
 * Saves (or replaces) a program's secret for `provider`, sealed; it is never shown again. A
 * secret not shaped as the provider issues it is a 422 at `field` (the form's or the option's).
 */
export async function connectBilling(db: Db, programId: string, provider: BillingProvider, secret: string, now: string, field = '#/secret', mode: BillingMode = 'live'): Promise<void> {
  if (!provider.secret.pattern.test(secret)) throw invalidField(field, provider.secret.words);
  await saveBillingConnection(db, { program_id: programId, provider: provider.name, mode, secret_sealed: seal(await billingKey(db), secret), connected_at: now, last_event_at: null });
}

/** Saves (or replaces) a program's Stripe webhook signing secret (the dashboard's field, `--stripe-webhook-secret`). */
export function connectStripe(db: Db, programId: string, secret: string, now: string): Promise<void> {
  return connectBilling(db, programId, billingProviderOf('stripe'), secret, now, '#/stripeWebhookSecret');
}

/** Forgets a program's secret for `provider`: its events are refused from then on (400). False when it was not connected. */
export function disconnectBilling(db: Db, programId: string, provider: BillingProvider, mode: BillingMode = 'live'): Promise<boolean> {
  return deleteBillingConnection(db, programId, provider.name, mode);
}

/** A program's connections, by provider. */
export async function getBillingConnections(db: Db, programId: string): Promise<BillingConnection[]> {
  return (await listBillingConnections(db, programId)).map(serializeConnection);
}

export interface BillingEvent {
  id: string;
  provider: string;
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

/**
 * What a waiting payment keeps to become a sale when its customer is referred (billing_events.
 * waiting, JSON; the names are those rows already stored carry): the amount as its provider
 * counts it, converted by the provider the event came from (billing_events.provider), and who
 * it credits when it names an affiliate but not the customer's e-mail (Paddle's transactions:
 * the customer's event that brings the e-mail refers them by it).
 */
interface WaitingInvoice {
  invoiceId: string;
  amountPaid: unknown;
  paidAt: string | null;
  amountField?: string;
  credit?: Credit;
}
const ignored = (reason: string): Outcome => ({ outcome: 'ignored', reason, referral_id: null, sale_id: null });

/** The id a 409 duplicate names: recording it again is the success the event asks for. */
function existingIdOf(error: unknown): string | number | undefined {
  return error instanceof ApiError && (error.code === 'duplicate_referral' || error.code === 'duplicate_sale') ? (error as ApiError & { existingId?: string | number }).existingId : undefined;
}

/** The program's promotional code for a provider's discount code: by externalId (its id there), else by its code string. */
async function codeForDiscount(db: Db, program: ProgramContext, discount: DiscountCode | null): Promise<string | undefined> {
  if (!discount) return undefined;
  for (const query of [discount.id ? { externalId: discount.id } : null, discount.code ? { code: discount.code } : null]) {
    if (!query) continue;
    try {
      return (await getPromotionalCode(db, program, query)).code;
    } catch {
      // not this one
    }
  }
  return undefined;
}

async function creditOf(db: Db, program: ProgramContext, ref: string | undefined, discount: DiscountCode | null): Promise<Credit | undefined> {
  if (ref) return { affiliateId: ref };
  const code = await codeForDiscount(db, program, discount);
  return code === undefined ? undefined : { promoCode: code };
}

/**
 * The credit a waiting payment of the customer carries (a referral on a payment whose event had
 * no e-mail to refer them by), read under the customer's lock so a payment deciding to wait at
 * this moment is seen, or sees the customer this event remembers.
 */
async function creditOfWaitingPayments(db: Tx, program: ProgramContext, customerId: string): Promise<Credit | undefined> {
  await lockWaitingInvoicesOf(db, program.id, customerId);
  for (const row of await findWaitingOf(db, program.id, customerId, SETTLED_PER_REFERRAL)) {
    const credit = (JSON.parse(row.waiting ?? '{}') as WaitingInvoice).credit;
    if (credit) return credit;
  }
  return undefined;
}

/** The customer as the event names them, with the e-mail, name and date an earlier event of theirs gave when this one has no e-mail. */
async function withKnownEmail(db: Db, program: ProgramContext, provider: BillingProvider, customer: BillingCustomer): Promise<BillingCustomer> {
  if (customer.email) return customer;
  const known = await findBillingCustomer(db, program.id, provider.name, customer.id);
  // Dated by the customer's own creation, which came before any payment of theirs.
  return known ? { id: customer.id, email: known.email, name: customer.name ?? known.name, since: known.since === null ? customer.since : toIso(known.since) } : customer;
}

async function referCustomer(db: Tx, program: ProgramContext, provider: BillingProvider, named: BillingCustomer, credit: Credit | undefined): Promise<Outcome> {
  const customer = await withKnownEmail(db, program, provider, named);
  credit ??= await creditOfWaitingPayments(db, program, customer.id);
  if (!credit) {
    // Kept, so a payment of theirs that names an affiliate but not the e-mail can refer them.
    const kept = provider.paymentsNameCustomerById ? keptCustomer(customer) : null;
    if (kept) await rememberBillingCustomer(db, { program_id: program.id, provider: provider.name, id: customer.id, ...kept, since: customer.since, seen_at: program.clock().toISOString() });
    return ignored(provider.noCredit);
  }
  if (!customer.email) return ignored('the customer has no e-mail');
  const body = referralBody(customer, credit);
  if ('reason' in body) return ignored(body.reason);
  try {
    const referral = await createReferral(db, program, body.value, { referredAt: customer.since ?? undefined });
    await settleWaitingInvoices(db, program, customer.id, referral.id);
    return { outcome: 'recorded', reason: null, referral_id: referral.id, sale_id: null };
  } catch (error) {
    // A duplicate names the referral of this customer another event made, also one racing this
    // (customer.created and checkout.session.completed at once): recorded, naming it.
    const existing = existingIdOf(error);
    if (existing !== undefined) return { outcome: 'recorded', reason: 'the customer was already referred', referral_id: String(existing), sale_id: null };
    if (error instanceof ApiError && error.status < 500) return ignored(reasonOf(error));
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
    const provider = billingProviderNamed(row.provider);
    const payment = { id: invoice.invoiceId, amount: invoice.amountPaid, amountField: invoice.amountField ?? 'amount_paid', currency: program.currency, paidAt: invoice.paidAt };
    const outcome = provider ? await recordPaymentSale(tx, program, provider, referralId, payment) : ignored(`${row.provider} is not a billing provider of this version of Tandem`);
    await settleBillingEvent(tx, row, outcome);
  }
}

/**
 * A referral made through the API or the dashboard (POST or PUT /referrals) with a
 * referredUserExternalId: the invoices of that customer waiting for it become its sales, in the
 * referral's transaction (app.ts passes this to the referral routes as AppServices.referralMade).
 */
export async function settleWaitingInvoicesOfReferral(tx: Tx, program: ProgramContext, referral: Referral): Promise<void> {
  if (referral.referredUserExternalId) await settleWaitingInvoices(tx, program, referral.referredUserExternalId, referral.id);
}

/** The POST /sales body of a payment of the referral, by the API's rules; the reason when they refuse it. */
function paymentSaleBody(program: ProgramContext, provider: BillingProvider, referralId: string, payment: Payment): Read<CreateSaleBody> {
  const amount = provider.amountToMinor(payment.amount, program.currency, payment.amountField);
  if ('reason' in amount) return amount;
  return saleBody({ referralId, totalEarned: fromMinorUnits(amount.minor, program.currency), externalInvoiceId: payment.id });
}

async function recordPaymentSale(db: Db, program: ProgramContext, provider: BillingProvider, referralId: string, payment: Payment): Promise<Outcome> {
  const body = paymentSaleBody(program, provider, referralId, payment);
  if ('reason' in body) return ignored(body.reason);
  try {
    const paidAt = payment.paidAt === null ? undefined : new Date(payment.paidAt);
    const sale = await createSale(db, program, body.value, { paidAt });
    return { outcome: 'recorded', reason: null, referral_id: referralId, sale_id: sale.id };
  } catch (error) {
    const existing = existingIdOf(error);
    if (existing !== undefined) return { outcome: 'recorded', reason: 'the payment was already recorded', referral_id: referralId, sale_id: Number(existing) };
    if (error instanceof ApiError && error.status < 500) return ignored(reasonOf(error));
    throw error;
  }
}

/** A one-time payment of a customer just referred (a checkout that is its own payment): the sale itself. */
async function sellOneTimePayment(db: Db, program: ProgramContext, provider: BillingProvider, payment: Payment, referralId: string): Promise<Outcome> {
  if ((payment.currency ?? '').toUpperCase() !== program.currency) return ignored(`paid in ${(payment.currency ?? '?').toUpperCase()}, not the program's ${program.currency}`);
  if (payment.reference) await recordPayment(db, program.id, payment.reference, payment.id, program.clock().toISOString());
  return recordPaymentSale(db, program, provider, referralId, payment);
}

/**
 * A dispute holds the sale's unpaid commission (not due) while it is open; lost, the commission
 * is taken back like a full refund; won, it falls due at once. Each dispute keeps its state
 * (billing_disputes): an event older than the one applied, or any event after the close, is
 * ignored — a redelivered or late "dispute opened" never holds a closed dispute again.
 */
async function disputeOutcome(tx: Tx, program: ProgramContext, dispute: Extract<BillingAction, { kind: 'dispute' }>): Promise<Outcome> {
  const invoiceId = dispute.reference ? await invoiceOfPayment(tx, program.id, dispute.reference) : undefined;
  const saleId = invoiceId ? await findSaleIdOfInvoice(tx, program, invoiceId) : undefined;
  if (!invoiceId || saleId === undefined) return ignored('no recorded sale matches the disputed payment');
  const eventAt = dispute.eventCreatedAt;
  const now = program.clock().toISOString();
  const state = { program_id: program.id, id: dispute.id, sale_id: saleId, status: dispute.status, event_created_at: eventAt, closed_at: dispute.closes ? now : null, updated_at: now };
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
  if (!dispute.closes) {
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

/** A payment of a customer: their referral's sale, or (a customer not referred yet) waiting up to 24 hours for the referral. */
async function sellPayment(db: Tx, program: ProgramContext, provider: BillingProvider, { customerId, customer, referral, discount, payment }: Extract<BillingAction, { kind: 'pay' }>): Promise<Outcome> {
  if (!payment.amount || (payment.amount as number) <= 0) return ignored('nothing was paid');
  const currency = (payment.currency ?? '').toUpperCase();
  if (currency !== program.currency) return ignored(`paid in ${currency || '?'}, not the program's ${program.currency}`);
  if (!customerId || !customer) return ignored('the payment names no customer');
  // What the API would refuse of the sale (an amount the program's currency cannot hold, one
  // past its limit) is ignored now, rather than after waiting. The referral is a placeholder.
  const refused = paymentSaleBody(program, provider, '00000000-0000-4000-8000-000000000000', payment);
  if ('reason' in refused) return ignored(refused.reason);
  if (payment.reference) await recordPayment(db, program.id, payment.reference, payment.id, program.clock().toISOString());
  let referralId = await referralIdOfCustomer(db, program, customerId);
  // A tandem_referral or a discount code on the payment credits its affiliate.
  const credit = referralId === undefined ? await creditOf(db, program, referral, discount) : undefined;
  if (referralId === undefined) {
    // A provider sends the first payment before the checkout's customer as often as after. Looked
    // for again under the customer's lock: a referral (or the customer's e-mail) committed
    // meanwhile is seen, and one made after this waits for our commit and then finds the payment
    // (settleWaitingInvoices, creditOfWaitingPayments).
    await lockWaitingInvoicesOf(db, program.id, customerId);
    referralId = await referralIdOfCustomer(db, program, customerId);
  }
  if (referralId === undefined && credit) {
    // The customer becomes the affiliate's referral now, when the event or an earlier one gave their e-mail.
    const referred = await referCustomer(db, program, provider, customer, credit);
    if (referred.outcome === 'recorded') return recordPaymentSale(db, program, provider, referred.referral_id!, payment);
  }
  if (referralId !== undefined) return recordPaymentSale(db, program, provider, referralId, payment);
  if ((await countWaitingInvoices(db, program.id, WAITING_INVOICES_PER_PROGRAM)) >= WAITING_INVOICES_PER_PROGRAM) {
    return ignored(`the customer ${customerId} is not referred, and ${WAITING_INVOICES_PER_PROGRAM.toLocaleString('en-US')} payments of customers not referred yet are already waiting (the most a program keeps): this one is not kept`);
  }
  const waiting: WaitingInvoice = { invoiceId: payment.id, amountPaid: payment.amount, paidAt: payment.paidAt, amountField: payment.amountField, ...(credit ? { credit } : {}) };
  return { outcome: 'waiting', reason: `waiting up to 24 hours for the customer ${customerId} to be referred`, referral_id: null, sale_id: null, waiting: JSON.stringify(waiting), customer_id: customerId };
}

async function referralIdOfCustomer(db: Db, program: ProgramContext, customerId: string): Promise<string | undefined> {
  try {
    return (await getReferral(db, program, { externalId: customerId })).id;
  } catch (error) {
    if (error instanceof ApiError && error.code === 'not_found') return undefined;
    throw error;
  }
}

/** A refund: the payment's sale (by its id, or by the reference it was paid with) refunded up to the provider's cumulative amount, or by a numbered part of it once. */
async function refundPayment(db: Tx, program: ProgramContext, provider: BillingProvider, refund: Extract<BillingAction, { kind: 'refund' }>): Promise<Outcome> {
  if (refund.currency.toUpperCase() !== program.currency) return ignored(`refunded in ${refund.currency.toUpperCase()}, not the program's ${program.currency}`);
  let paymentId = refund.paymentId;
  if (!paymentId && refund.reference) paymentId = await invoiceOfPayment(db, program.id, refund.reference);
  if (!paymentId) return ignored(provider.noPaymentRefunded);
  const refunded = provider.amountToMinor(refund.refundedTotal, program.currency, refund.amountField);
  if ('reason' in refunded) return ignored(refunded.reason);
  if (refunded.minor === 0) return ignored('nothing was refunded');
  if (refund.partId !== undefined && !(await claimRefundPart(db, program.id, refund.partId, paymentId, program.clock().toISOString()))) {
    const saleId = await findSaleIdOfInvoice(db, program, paymentId);
    return { outcome: 'recorded', reason: `the refund ${refund.partId} was already applied`, referral_id: null, sale_id: saleId ?? null };
  }
  try {
    const sale =
      refund.partId === undefined
        ? await refundSale(db, program, { externalInvoiceId: paymentId }, { upToRefundedMinor: refunded.minor })
        : await refundSale(db, program, { externalInvoiceId: paymentId, amount: fromMinorUnits(refunded.minor, program.currency) });
    return { outcome: 'recorded', reason: null, referral_id: sale.referralId, sale_id: sale.id };
  } catch (error) {
    if (error instanceof ApiError && error.status < 500) {
      if (refund.partId !== undefined) await releaseRefundPart(db, program.id, refund.partId);
      return ignored(error.code === 'not_found' ? `no sale is recorded for the payment ${paymentId}` : reasonOf(error));
    }
    throw error;
  }
}

/** An event's work, in the transaction that claimed its id. */
async function apply(db: Tx, program: ProgramContext, provider: BillingProvider, action: BillingAction): Promise<Outcome> {
  switch (action.kind) {
    case 'refer': {
      const referred = await referCustomer(db, program, provider, action.customer, await creditOf(db, program, action.referral, action.discount));
      if (referred.outcome === 'recorded' && action.payment) return sellOneTimePayment(db, program, provider, action.payment, referred.referral_id!);
      return referred;
    }
    case 'pay':
      return sellPayment(db, program, provider, action);
    case 'refund':
      return refundPayment(db, program, provider, action);
    case 'dispute':
      return disputeOutcome(db, program, action);
    case 'note-payment':
      await recordPayment(db, program.id, action.reference, action.paymentId, program.clock().toISOString());
      return { outcome: 'recorded', reason: `payment ${action.reference} of ${action.paymentId} noted for refunds`, referral_id: null, sale_id: null };
    case 'ignore':
      return ignored(action.reason);
  }
}

/**
 * A delivery from a provider, verified: by the program's secret (a missing or bad signature, or
 * no secret saved, is a 400 and nothing is recorded), then the id and type it will be stored
 * under. What counts against the program's limit of events per minute is only what passes here
 * (billing.routes.ts), so nobody without the secret can spend a program's limit.
 */
export async function verifyBillingEvent(db: Db, program: ProgramContext, provider: BillingProvider, delivery: Delivery): Promise<VerifiedEvent> {
  // One read for both sides ('live' sorts before 'test').
  const saved = await findBillingConnectionsTo(db, program.id, provider.name);
  if (saved.length === 0) throw new ApiError('bad_request', provider.notConnected);
  const key = await billingKey(db);
  let refusal: unknown;
  // The live secret first, then the test one: the secret that verifies the delivery says its side.
  for (const connection of saved) {
    try {
      const envelope = await provider.verify(delivery, open(key, connection.secret_sealed));
      const declared = provider.declaredMode?.(envelope);
      return { envelope, mode: connection.mode, mismatch: declared !== undefined && declared !== connection.mode ? declared : undefined };
    } catch (error) {
      refusal ??= error;
    }
  }
  throw refusal;
}

/** A verified delivery, the side whose secret verified it, and the side the event says it is of when the two disagree. */
export interface VerifiedEvent {
  envelope: BillingEnvelope;
  mode: BillingMode;
  mismatch: BillingMode | undefined;
}

/**
 * A verified event handled and stored once; answers whether it was new. Its work reads only
 * what the event names (a customer, a payment): never the program's other waiting invoices or
 * history.
 */
export async function recordBillingEvent(
  db: Db,
  program: ProgramContext,
  provider: BillingProvider,
  envelope: BillingEnvelope,
  connection: { programId: string; mode: BillingMode } = { programId: program.id, mode: 'live' },
  refused?: string,
): Promise<{ received: true; duplicate: boolean }> {
  // The id is claimed first, in the transaction of the event's work (the services' own
  // transactions run inside it, as savepoints): a redelivery finds the claim and does nothing,
  // and work that fails takes its claim back with it, so the provider's retry does it again.
  const claimed = await inTransaction(db, async (tx) => {
    const row = { program_id: program.id, id: envelope.id, provider: provider.name, type: envelope.type, created_at: program.clock().toISOString(), ...ignored('being handled') };
    if (!(await insertBillingEventOnce(tx, row))) return false;
    const outcome = refused === undefined ? await apply(tx, program, provider, provider.actionOf(envelope)) : ignored(refused);
    await setBillingEventOutcome(tx, { programId: program.id, provider: provider.name, id: envelope.id }, outcome);
    return row.created_at;
  });
  // After the commit, in its own statement: the events of a program's burst never wait on the
  // connection's row for the length of their work.
  if (claimed) await touchBillingConnection(db, connection.programId, provider.name, connection.mode, claimed);
  return { received: true, duplicate: !claimed };
}

/** The dashboard's Billing section: the program's connections, and its newest events of every provider. */
export async function getBillingStatus(db: Db, program: ProgramContext, shown: number): Promise<{ connections: BillingConnection[]; events: BillingEvent[] }> {
  const [connections, events] = await Promise.all([getBillingConnections(db, program.id), getBillingEventPage(db, program, { limit: shown })]);
  return { connections, events: events.items };
}
