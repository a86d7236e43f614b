import { Type, type TSchema } from '@sinclair/typebox';
import fastJson from 'fast-json-stringify';
import type { FastifyReply } from 'fastify';

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * GET routes return one object when the query names a unique key, else a bare array
 * (CONTRACT.md). The documented schema is the union; at run time each branch gets its own
 * compiled serializer, which is much faster than letting the serializer try the union.
 */
export function oneOrMany<T extends TSchema>(schema: T) {
  const one = fastJson(schema);
  const many = fastJson(Type.Array(schema));
  return {
    schema: Type.Union([schema, Type.Array(schema)]),
    // A custom serializer skips Fastify's default content type, so it is set here.
    sendOne: (reply: FastifyReply, value: unknown) => reply.type(JSON_TYPE).serializer(one).send(value),
    sendMany: (reply: FastifyReply, values: unknown[]) => reply.type(JSON_TYPE).serializer(many).send(values),
  };
}
