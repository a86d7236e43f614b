import { systemClock } from '../../domain/clock.ts';
import { getProgram, toProgramContext } from '../../modules/programs/program.service.ts';
import { runPayouts } from '../../modules/payouts/payout.service.ts';
import { uuid, withMigratedDatabase, type Command } from '../command.ts';

export const payoutCommands = {
  'payout run': {
    summary: "make the month's payouts of a program",
    description: 'Makes one pending payout for each affiliate whose due commission reaches the minimum payout, as the dashboard\'s "Run payouts" does (docs/payouts.md).',
    flags: {
      program: { value: 'ID', description: "the program's id (tandem program list)", required: true },
    },
    example: 'tandem payout run --program 7f0c2a4e-1b3d-4c5e-8f90-a1b2c3d4e5f6',
    run(config, options) {
      const programId = uuid(options, 'program', 'a program');
      return withMigratedDatabase(config, async ({ db }) => {
        const program = toProgramContext(await getProgram(db, programId), systemClock);
        const payouts = await runPayouts(db, program, {});
        const lines = payouts.map((p) => `  ${p.affiliate.firstName} ${p.affiliate.lastName} <${p.affiliate.payoutEmail}>: ${p.amount} ${p.currency} (${p.entryCount} entries, payout ${p.id})`);
        const text = payouts.length ? [`made ${payouts.length} payout${payouts.length === 1 ? '' : 's'}:`, ...lines].join('\n') : 'nothing to pay: no affiliate has a due balance at or above the minimum';
        return { text, json: { payouts } };
      });
    },
  },
} satisfies Record<string, Command>;
