import type { BillingProvider } from '../billing-provider.ts';
import { chargebeeProvider } from './chargebee/chargebee.provider.ts';
import { lemonSqueezyProvider } from './lemonsqueezy/lemonsqueezy.provider.ts';
import { paddleProvider } from './paddle/paddle.provider.ts';
import { polarProvider } from './polar/polar.provider.ts';
import { stripeProvider } from './stripe/stripe.provider.ts';

/** Every billing provider Tandem receives events from: one line each (billing-provider.ts). */
export const BILLING_PROVIDERS: readonly BillingProvider[] = [stripeProvider, paddleProvider, lemonSqueezyProvider, polarProvider, chargebeeProvider];

/** The provider of a receiver's path segment or a billing event's `provider`, if Tandem has one by that name. */
export function billingProviderNamed(name: string): BillingProvider | undefined {
  return BILLING_PROVIDERS.find((provider) => provider.name === name);
}
