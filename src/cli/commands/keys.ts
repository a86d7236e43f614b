import { getProgram, openTestSide } from '../../modules/programs/program.service.ts';
import { issueToken, listAllProgramTokens, revokeToken } from '../../modules/tokens/token.service.ts';
import { minute, optionalText, table, uuid, withMigratedDatabase, type Command } from '../command.ts';

// API keys: a program's bearer tokens. The secret is printed once, by key create; lists show its
// first characters (the prefix) and never the secret or its hash.

const DEFAULT_KEY_NAME = 'CLI key';

export const keyCommands = {
  'key create': {
    summary: "create an API key for a program; prints its token once",
    description: 'Issues a bearer token (tdm_…) for the program\'s API and prints it once: copy it then, only its hash is stored.',
    flags: {
      program: { value: 'ID', description: "the program's id (tandem program list)", required: true },
      name: { value: 'N', description: 'a name to recognise the key by in lists', default: DEFAULT_KEY_NAME },
      test: { description: "a test key (tdm_test_…) of the program's test side, made on first use: it reads and writes only test data (docs/test-mode.md)", default: 'off: a live key' },
    },
    example: 'tandem key create --program 7f0c2a4e-1b3d-4c5e-8f90-a1b2c3d4e5f6 --name billing',
    run(config, options) {
      const liveId = uuid(options, 'program', 'a program');
      const name = optionalText(options, 'name') ?? DEFAULT_KEY_NAME;
      return withMigratedDatabase(config, async ({ db }) => {
        const programId = options.test === true ? (await openTestSide(db, liveId)).id : (await getProgram(db, liveId)).id;
        const key = await issueToken(db, { programId, name, kind: 'api_key' });
        const side = programId === liveId ? `program ${programId}` : `the test side (${programId}) of program ${liveId}`;
        return {
          text: `API key ${key.id} for ${side}. Copy the token now; it is not shown again:\n${key.token}`,
          json: { id: key.id, token: key.token, programId, name: key.name, livemode: programId === liveId },
        };
      });
    },
  },
  'key list': {
    summary: "list a program's API keys and connected apps' tokens, never their secrets",
    description: 'Lists every token of the program, newest first, revoked ones included: its id, prefix, name, kind (api_key or connect), creation and last use (to the minute).',
    flags: {
      program: { value: 'ID', description: "the program's id (tandem program list)", required: true },
    },
    example: 'tandem key list --program 7f0c2a4e-1b3d-4c5e-8f90-a1b2c3d4e5f6',
    run(config, options) {
      const programId = uuid(options, 'program', 'a program');
      return withMigratedDatabase(config, async ({ db }) => {
        await getProgram(db, programId);
        const keys = await listAllProgramTokens(db, programId);
        const rows = keys.map((k) => [k.id, `${k.prefix}…`, k.name, k.kind, minute(k.createdAt), minute(k.lastUsedAt), k.revokedAt === null ? 'active' : `revoked ${minute(k.revokedAt)}`]);
        const text = keys.length ? table(['ID', 'PREFIX', 'NAME', 'KIND', 'CREATED (UTC)', 'LAST USED', 'STATUS'], rows) : 'no keys; create one with tandem key create';
        return { text, json: { programId, keys } };
      });
    },
  },
  'key revoke': {
    summary: 'revoke an API key or a connected app\'s token',
    description: 'Revokes the token with this id (key list shows them) and the webhooks subscribed with it; every server refuses it from its next request.',
    flags: {
      'token-id': { value: 'ID', description: 'the id of the key (tandem key list), not the token itself', required: true },
    },
    example: 'tandem key revoke --token-id 0b9d8c7e-6f5a-4b3c-9d2e-1f0a9b8c7d6e',
    run(config, options) {
      const id = uuid(options, 'token-id', 'a token');
      return withMigratedDatabase(config, async ({ db }) => {
        await revokeToken(db, id);
        return { text: `revoked token ${id}`, json: { id, revoked: true } };
      });
    },
  },
} satisfies Record<string, Command>;
