import { readFileSync } from 'node:fs';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppServices } from '../../app-services.ts';
import { ApiError, invalidField } from '../../domain/errors.ts';
import { addressKey } from '../../http/client-address.ts';
import { errorResponses, Uuid } from '../../http/schemas.ts';
import { isUuid } from '../../domain/ids.ts';
import { instanceKey } from '../../db/instance-keys.ts';
import { countAttempt, type AttemptLimit } from '../throttling/attempt-counter.ts';
import { getProgram, type ProgramRow } from '../programs/program.service.ts';
import { canonicalLandingUrl, LANDING_URL_MAX, originBelongsTo, originRefused, recordClick, type ClickCounting } from './click.service.ts';
import { ASSETS_DIR } from '../../paths.ts';

// The public side of click tracking: the script merchants add to their site, and the endpoint
// it reports clicks to. No token: the program's domain decides which pages may report.

/** Reports per client address (IPv6: per /64) per minute, over every program: a page view sends at most one. */
export const CLICK_ADDRESS_LIMIT: AttemptLimit = { max: 60, windowMs: 60_000 };

const TRACKER = readFileSync(new URL('tracker.js', ASSETS_DIR), 'utf8');

const ClickQuery = Type.Object({ programId: Uuid });
const ClickBody = Type.Object({
  url: Type.String({ minLength: 1, maxLength: 8000, description: `the landing page, with the referral parameter; stored canonical and cut to ${LANDING_URL_MAX} characters` }),
  visitorId: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]{8,64}$', description: 'ignored (sent by earlier versions of the script): the server tells visitors apart' })),
});
const ClickAnswerSchema = Type.Object({
  referral: Type.Union([Type.String(), Type.Null()]),
  counted: Type.Boolean(),
  cookieDays: Type.Integer(),
  attribution: Type.String({ enum: ['first', 'last'] }),
  domain: Type.String(),
});

/** Allows the page's origin to read the answer; only ever called for an origin of the program's site. */
function allowOrigin(reply: FastifyReply, origin: string): void {
  reply.header('access-control-allow-origin', origin).header('vary', 'Origin');
}

async function programOf(request: FastifyRequest, db: AppServices['db']): Promise<ProgramRow> {
  const { programId } = request.query as { programId?: string };
  if (programId === undefined || !isUuid(programId)) throw invalidField('#/programId', 'must be the program id (data-program-id)');
  try {
    return await getProgram(db, programId.toLowerCase());
  } catch (error) {
    if (error instanceof ApiError && error.code === 'not_found') {
      throw new ApiError('not_found', `No program has the id ${programId} (the tag's data-program-id): copy the tag again from the dashboard's Settings.`);
    }
    throw error;
  }
}

export const trackingRoutes: FastifyPluginAsyncTypebox<AppServices> = async (app, { db, clock, config }) => {
  const counting: ClickCounting = {
    visitorSecret: await instanceKey(db, 'click-visitor'),
    programLimit: config.clickProgramLimitPerMinute === 0 ? null : { max: config.clickProgramLimitPerMinute, windowMs: 60_000 },
  };

  // The script reports with Content-Type text/plain (a "simple" request: no preflight, so one
  // request per landing); its body is still JSON. Small: a URL.
  app.removeContentTypeParser('text/plain');
  app.addContentTypeParser('text/plain', { parseAs: 'string', bodyLimit: 8 * 1024 }, (_request, body, done) => {
    try {
      done(null, JSON.parse(body as string));
    } catch {
      done(new ApiError('bad_request', 'The request body is not valid JSON.'), undefined);
    }
  });

  // A refused report answers with CORS headers too, so the page (and its developer tools) can
  // read why — a page outside the program's domain, an unknown program id — instead of the
  // browser's bare "blocked by CORS policy". Any origin may read a refusal: it says nothing a
  // page could not learn otherwise (the request needs no credentials and sends none). A
  // preflight stays refused: the script never sends one.
  app.addHook('onSend', async (request, reply, payload) => {
    if (request.method === 'POST' && reply.statusCode >= 400 && request.headers.origin !== undefined && !reply.hasHeader('access-control-allow-origin')) {
      reply.header('access-control-allow-origin', '*').header('access-control-expose-headers', 'retry-after, x-request-id');
    }
    return payload;
  });

  app.get('/tracker.js', { schema: { hide: true } }, async (_request, reply) =>
    reply
      .type('text/javascript; charset=utf-8')
      .header('cache-control', 'public, max-age=3600')
      // Loaded by other sites' pages: helmet's same-origin default would block it.
      .header('cross-origin-resource-policy', 'cross-origin')
      .send(TRACKER),
  );

  app.options('/api/track/click', { schema: { hide: true } }, async (request, reply) => {
    const program = await programOf(request, db);
    const origin = request.headers.origin;
    if (!origin || !originBelongsTo(origin, program.domain)) throw originRefused(origin, program.domain);
    allowOrigin(reply, origin);
    return reply
      .header('access-control-allow-methods', 'POST')
      .header('access-control-allow-headers', 'content-type')
      .header('access-control-max-age', '86400')
      .code(204)
      .send();
  });

  app.post(
    '/api/track/click',
    {
      bodyLimit: 8 * 1024,
      schema: {
        tags: ['Tracking'],
        summary: 'Record a click',
        description:
          "What `/tracker.js` sends when a visitor lands on a page of the program's site with the referral parameter (`?ref=jane`): the click is counted for the link, and the answer names the referral to keep (a link string, `null` when the parameter names nobody) and for how long. No token: only pages of the program's domain and its subdomains are answered (`Origin`, with CORS for them). The script sends the JSON as `text/plain`, so the browser sends no preflight.",
        consumes: ['application/json', 'text/plain'],
        querystring: ClickQuery,
        body: ClickBody,
        response: {
          200: ClickAnswerSchema,
          ...errorResponses(
            ['bad_request', 'the body is not JSON, or is sent as neither `text/plain` nor `application/json`'],
            'origin_not_allowed',
            ['not_found', 'no program with this `programId`'],
            ['payload_too_large', 'the body is larger than 8 KiB'],
            ['validation_failed', 'the `programId` or the body is invalid, or `url` is not a page of the program\'s domain'],
            ['affiliate_inactive', "the link's affiliate is inactive; no click is counted"],
            ['rate_limited', 'more than 60 reports a minute from one address (IPv6: one /64)'],
          ),
        },
      },
      // The address limit and the origin check come before the body is read or validated.
      preValidation: async (request, reply) => {
        const wait = await countAttempt(db, `click:address:${addressKey(request.ip)}`, CLICK_ADDRESS_LIMIT, clock());
        if (wait !== null) {
          reply.header('retry-after', String(wait));
          throw new ApiError('rate_limited', `Too many clicks from this address; retry in ${wait} s.`);
        }
        const program = await programOf(request, db);
        const origin = request.headers.origin;
        if (!origin || !originBelongsTo(origin, program.domain)) throw originRefused(origin, program.domain);
        allowOrigin(reply, origin);
        request.trackedProgram = program;
      },
    },
    async (request) => {
      const program = request.trackedProgram!;
      let landing: URL;
      try {
        landing = new URL(request.body.url);
      } catch {
        throw invalidField('#/url', 'must be an absolute URL');
      }
      if (!originBelongsTo(landing.origin, program.domain)) throw invalidField('#/url', `must be a page of ${program.domain}`);
      const url = canonicalLandingUrl(landing);
      return recordClick(db, clock, counting, { program, url, address: addressKey(request.ip), userAgent: request.headers['user-agent'] ?? '' });
    },
  );
};

declare module 'fastify' {
  interface FastifyRequest {
    /** The program a click report is for, once its origin was checked. */
    trackedProgram?: ProgramRow;
  }
}
