import { createUser, listUsers, MIN_PASSWORD_LENGTH } from '../../modules/users/user.service.ts';
import { systemClock } from '../../domain/clock.ts';
import { createPasswordResetLink } from '../../modules/users/password-reset.service.ts';
import { minute, table, text, withMigratedDatabase, type Command } from '../command.ts';

// Operator accounts: the people who sign in to the dashboard and own programs.

export const userCommands = {
  'user create': {
    summary: 'create an account that can sign in to the dashboard and own programs',
    description: `Creates a user with this e-mail and password (at least ${MIN_PASSWORD_LENGTH} characters); the first user created is the instance's operator.`,
    flags: {
      email: { value: 'E', description: 'the e-mail the user signs in with', required: true },
      password: { value: 'P', description: `the password, at least ${MIN_PASSWORD_LENGTH} characters`, required: true },
    },
    example: "tandem user create --email you@example.com --password 'a long passphrase'",
    run(config, options) {
      const input = { email: text(options, 'email'), password: text(options, 'password') };
      return withMigratedDatabase(config, async ({ db }) => {
        const user = await createUser(db, input);
        return { text: `created user ${user.email} (${user.id})`, json: user };
      });
    },
  },
  'user list': {
    summary: 'list every user, oldest first (the first is the operator)',
    description: 'Lists the id, e-mail and creation time of every user, marking the operator (the first account, the only one allowed to change instance settings).',
    flags: {},
    example: 'tandem user list',
    run: (config) =>
      withMigratedDatabase(config, async ({ db }) => {
        const users = await listUsers(db);
        const rows = users.map((u) => [u.id, u.email, minute(u.createdAt), u.operator ? 'operator' : '']);
        return { text: users.length ? table(['ID', 'E-MAIL', 'CREATED (UTC)', ''], rows) : 'no users; add one with tandem user create', json: { users } };
      }),
  },
  'user reset-password': {
    summary: "print a one-time link that sets a user's new password",
    description: 'Prints a link (valid once, for 30 minutes) that lets the user choose a new password on the dashboard; nothing is e-mailed, and the current password keeps working until the link is used.',
    flags: {
      email: { value: 'E', description: 'the e-mail of the account', required: true },
    },
    example: 'tandem user reset-password --email you@example.com',
    run(config, options) {
      const email = text(options, 'email');
      return withMigratedDatabase(config, async ({ db }) => {
        const link = await createPasswordResetLink(db, systemClock, email, config.siteUrl);
        return { text: `reset link for ${link.email} (valid once, until ${minute(link.expiresAt)} UTC):\n${link.url}`, json: link };
      });
    },
  },
} satisfies Record<string, Command>;
