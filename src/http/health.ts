import type { FastifyPluginAsync } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { DatabaseHandle } from '../db/database.ts';

const Health = Type.Object({ status: Type.String(), database: Type.String() });

export const healthRoutes: FastifyPluginAsync<{ database: DatabaseHandle }> = async (app, { database }) => {
  app.get(
    '/healthz',
    { schema: { tags: ['Operations'], summary: 'Liveness and database reachability', response: { 200: Health, 503: Health } } },
    async (_request, reply) => {
      const up = await database.ping();
      return reply.code(up ? 200 : 503).send({ status: up ? 'ok' : 'unavailable', database: up ? 'reachable' : 'unreachable' });
    },
  );
};
