import type { Clock } from './clock.ts';
import type { CommissionPlan } from './commission.ts';

/** What every service of the API needs of the token's program: the tenant context (made from its row in programs/). */
export interface ProgramContext {
  readonly id: string;
  readonly name: string;
  readonly currency: string;
  /** Millionths (20 % = 200000). */
  readonly defaultCommissionRate: number;
  readonly baseUrls: readonly string[];
  readonly referralParam: string;
  /** The commission plan new sales are recorded under. */
  readonly plan: CommissionPlan;
  /** The app's clock: services take "now" from here. */
  readonly clock: Clock;
  /** False on a program's test side (test mode): its events say so. */
  readonly livemode: boolean;
}
