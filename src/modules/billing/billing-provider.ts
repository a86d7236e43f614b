// The seam between billing providers and Tandem (issue 32). A provider's module (providers/…) is
// the only code that knows its wire: it verifies a delivery, reads the event by the API's input
// rules, and turns it into one neutral action below. billing.service.ts applies the actions with
// the rules every provider shares: exactly once per event, the 24-hour wait for a customer not
// referred yet, the plan, refunds up to the provider's refunded total, disputes that hold a
// commission. Adding a provider is a module that implements BillingProvider and a line in
// providers/index.ts.

/** A value read, or why it could not be (in words: it becomes the event's `reason`). */
export type Read<T> = { value: T } | { reason: string };

/** A verified delivery: the id and type its billing event is stored under, and the event as sent. */
export interface BillingEnvelope {
  id: string;
  type: string;
  event: Record<string, unknown>;
}

/** A customer as the provider names them: the service checks the values as POST /referrals would. */
export interface BillingCustomer {
  id: string;
  email: unknown;
  name: unknown;
  /** When the customer came, as the provider dates the object that names them (ISO), or null: the referral is dated then, so a plan's durationMonths counts from it even when the event arrives late. */
  since: string | null;
}

/** A discount code the provider reports on a checkout or payment: its id there, and its code string when the event carries it. */
export interface DiscountCode {
  id?: string;
  code?: string;
}

/** A payment that becomes a sale of its customer's referral. */
export interface Payment {
  /** The provider's id of the payment (Stripe: the invoice or the session): the sale's externalInvoiceId. */
  id: string;
  /** What was paid, as the provider counts it (BillingProvider.amountToMinor converts it). */
  amount: unknown;
  /** The field of the event the amount came from, for a reason that names it. */
  amountField: string;
  currency: string | undefined;
  /** When the provider says it was paid (the sale's createdAt), or null: when it arrived. */
  paidAt: string | null;
  /** The provider's reference a later refund or dispute names instead of the payment's id (Stripe: a payment intent). */
  reference?: string;
}

/** The one thing an event asks of Tandem. */
export type BillingAction =
  /** A customer to refer (a tandem_referral, or a discount code of the program, credits them); a one-time payment of theirs, if any, is the sale. */
  | { kind: 'refer'; customer: BillingCustomer; referral: string | undefined; discount: DiscountCode | null; payment?: Payment }
  /**
   * A payment of the customer `customerId`: a sale of their referral, or waiting up to 24 hours
   * for it. `referral` or `discount` may refer them now, by the customer's e-mail from this event
   * or an earlier one of theirs; without one yet, the payment waits with its credit for the
   * customer's event that brings it.
   */
  | { kind: 'pay'; customerId: string | undefined; customer: BillingCustomer | undefined; referral?: string; discount: DiscountCode | null; payment: Payment }
  /**
   * The payment (by id or reference) refunded up to the provider's refunded total for it
   * (cumulative: Stripe, Lemon Squeezy, Polar, Chargebee); or, with `partId`, by one numbered
   * part of it, `refundedTotal` being that part's amount, applied once (a Paddle adjustment).
   */
  | { kind: 'refund'; paymentId: string | undefined; reference: string | undefined; refundedTotal: unknown; amountField: string; currency: string; partId?: string }
  /** A dispute of the payment `reference` opened (the commission held) or closed (lost: taken back; else due). */
  | { kind: 'dispute'; id: string; reference: string | undefined; status: string; closes: boolean; eventCreatedAt: string }
  /** Which payment a reference paid, kept for a later refund or dispute that names only the reference. */
  | { kind: 'note-payment'; paymentId: string; reference: string }
  | { kind: 'ignore'; reason: string };

/** A program's live side, or its test side (test mode): each has its own secret per provider. */
export type BillingMode = 'live' | 'test';

/** A delivery as it reached Tandem: the bytes the signature covers, and the headers. */
export interface Delivery {
  rawBody: Buffer;
  headers: Record<string, string | string[] | undefined>;
}

/** How a merchant connects the provider, in words for the dashboard's Billing section (docs/billing.md says it at length). */
export interface BillingSetup {
  /** Where in the provider's dashboard a webhook is added. */
  where: string;
  /** The events to select, as the provider names them. */
  events: readonly string[];
  /** What the provider calls the secret, and how it looks. */
  secretName: string;
  secretHint: string;
  /** How the checkout carries window.tandem.referral to the provider. */
  carrier: string;
  /** How to send a test event. */
  test: string;
  /** For the OpenAPI reference: the headers that carry the credential (name → what it holds), and an event as the provider sends it. */
  headers: Readonly<Record<string, string>>;
  example: Readonly<Record<string, unknown>>;
}

export interface BillingProvider {
  /** The path segment and the billing events' `provider`. */
  name: string;
  /** For people: "Stripe". */
  displayName: string;
  setup: BillingSetup;
  /**
   * Whether its payments name the customer only by id (Paddle's transactions): then a customer
   * event that credits nobody keeps the customer's e-mail, for a payment that names an affiliate.
   */
  paymentsNameCustomerById: boolean;
  /** Refused before anything is read (a 400, nothing recorded) when the program has no secret saved. */
  notConnected: string;
  /** The secret a program connects with, as the provider issues it, and the words that say so when another is given. */
  secret: { pattern: RegExp; words: string };
  /** The delivery verified by the program's secret, then its id and type; a missing or bad signature throws a 400 ApiError. */
  verify(delivery: Delivery, secret: string): Promise<BillingEnvelope>;
  /**
   * The side the event says it belongs to, where the provider marks it (Stripe `livemode`, Lemon
   * Squeezy `meta.test_mode`); undefined where only the secret tells (Paddle's sandbox, Polar's,
   * Chargebee's test sites have secrets of their own).
   */
  declaredMode?(envelope: BillingEnvelope): BillingMode | undefined;
  /** What the event asks, every value read by the API's input rules. */
  actionOf(envelope: BillingEnvelope): BillingAction;
  /** An amount of the provider's in `currency`'s minor units as Tandem keeps them, or why it cannot be one. */
  amountToMinor(amount: unknown, currency: string, field: string): { minor: number } | { reason: string };
  /** The reason an event's customer is not referred: nothing of the event credits an affiliate. */
  noCredit: string;
  /** The reason a refund is ignored: no recorded payment matches it. */
  noPaymentRefunded: string;
}
