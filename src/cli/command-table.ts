import type { Command } from './command.ts';
import { dataCommands, serverCommands } from './commands/server.ts';
import { userCommands } from './commands/users.ts';
import { programCommands } from './commands/programs.ts';
import { billingCommands } from './commands/billing.ts';
import { payoutCommands } from './commands/payouts.ts';
import { keyCommands } from './commands/keys.ts';
import { integrationCommands } from './commands/integrations.ts';

/**
 * Every command of `tandem`, by name, in the order `tandem --help` lists them. A new command is
 * one entry in its group's file (summary, description, flags with their meaning and default,
 * example, run): parsing, checks and help all come from it, and test/cli/cli-help.test.ts checks
 * that its help is complete.
 */
export const commands: Readonly<Record<string, Command>> = {
  ...serverCommands,
  ...userCommands,
  ...programCommands,
  ...billingCommands,
  ...payoutCommands,
  ...keyCommands,
  ...integrationCommands,
  ...dataCommands,
};
