import { Type, type Static } from '@sinclair/typebox';
import { DateTime, ListQuery, Nullable, Uuid } from '../../http/schemas.ts';

export const ENTRY_KINDS = ['sale', 'refund', 'adjustment', 'void'] as const;
export const ENTRY_STATUSES = ['pending', 'due', 'held', 'paid'] as const;
export const HELD_BY = ['dispute', 'flag'] as const;

/** One entry of the commission ledger (CONTRACT "Commission plans and the ledger"). */
export const CommissionEntrySchema = Type.Object(
  {
    id: Type.Integer({ description: 'grows with every entry' }),
    affiliateId: Uuid,
    saleId: Nullable(Type.Integer()),
    payoutId: Nullable(Uuid),
    kind: Type.String({ enum: [...ENTRY_KINDS], description: 'sale (+), refund (−), adjustment (− or +, an edit of the sale), void (−, the sale was deleted)' }),
    amount: Type.Number({ description: 'major units of the currency, signed' }),
    currency: Type.String(),
    status: Type.String({ enum: [...ENTRY_STATUSES], description: 'pending until dueAt, then due, paid once its payout is paid; held (never due) while a dispute or a fraud flag holds it' }),
    dueAt: Nullable(Type.String({ format: 'date-time', description: 'null while held' })),
    heldBy: Type.Optional(Type.String({ enum: [...HELD_BY], description: 'only on a held entry: what holds it' })),
    createdAt: DateTime,
  },
  { title: 'CommissionEntry' },
);
export type CommissionEntry = Static<typeof CommissionEntrySchema>;

export const CommissionsQuery = Type.Object({
  affiliateId: Type.Optional(Uuid),
  saleId: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER })),
  status: Type.Optional(Type.String({ enum: [...ENTRY_STATUSES] })),
  payoutId: Type.Optional(Uuid),
  ...ListQuery,
});
export type CommissionsQuery = Static<typeof CommissionsQuery>;
