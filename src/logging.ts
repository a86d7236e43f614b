import type { Config } from './config.ts';
import type { Writable } from 'node:stream';
import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import pino, { type DestinationStream } from 'pino';

// The log's two shapes. JSON lines (pino's own) for machines: the default when stdout is not a
// terminal, or with LOG_FORMAT=json. Short human lines for a terminal (LOG_FORMAT=pretty, the
// default on a TTY): one per request — time, method, URL, status, duration — and the message
// of everything else, with an error's stack. A pino destination, not a transport: the lines
// are formatted in the process as pino writes them, with no worker thread and no package.

/**
 * One-time secrets travel in some URLs: a portal login link (`/portal/{slug}/login/{token}`), a
 * password reset link (`/reset-password/{token}`), and query parameters a client may send
 * (`code`, `state` of the connect flow, `token`, `access_token`…), also inside a login page's
 * `next=`. The request log writes the URL with those replaced by `[redacted]` (docs/security.md,
 * "What is logged"); the path is judged percent-decoded, so an escaped spelling hides nothing.
 */
const REDACTED = '[redacted]';
/** A path (decoded) whose rest is a one-time secret; group 1 is what stays. */
const SECRET_PATH = /^(\/+portal\/+[^/]+\/+login\/+|\/+reset-password\/+)[^/]/i;
/** Query parameters whose value is a secret (names compared in lower case, brackets ignored). */
const SECRET_NAMES = ['code', 'state', 'token', 'access_token', 'refresh_token', 'id_token', 'code_verifier', 'client_secret', 'password', 'secret', 'api_key', 'apikey'];
const SECRET_PARAMETERS = new Set(SECRET_NAMES);
/**
 * Cheap first look, on every request line: a URL with no escape, no secret path and no
 * parameter of those names (or `next`) holds no secret and is logged as it is. (Sending every
 * URL with a query through the parsing below cost ~12 µs of CPU per API lookup, measured.)
 */
const MAYBE_SECRET = new RegExp(`%|login/|reset-password/|[?&](?:${[...SECRET_NAMES, 'next'].join('|')})(?:[=[&]|$)`, 'i');

function decodedOrAsIs(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

function redactQuery(query: string): string {
  return query
    .split('&')
    .map((pair) => {
      const equals = pair.indexOf('=');
      if (equals === -1) return pair;
      const name = decodedOrAsIs(pair.slice(0, equals).replace(/\+/g, ' ')).toLowerCase().replace(/\[.*$/, '');
      if (SECRET_PARAMETERS.has(name)) return `${pair.slice(0, equals)}=${REDACTED}`;
      if (name !== 'next') return pair;
      // A login page's next= holds a whole URL of this site (the connect flow's, with its state).
      const next = decodedOrAsIs(pair.slice(equals + 1).replace(/\+/g, ' '));
      const redacted = redactUrl(next);
      return redacted === next ? pair : `${pair.slice(0, equals)}=${encodeURIComponent(redacted)}`;
    })
    .join('&');
}

/** The URL as the log may show it: one-time secrets in its path or query replaced by `[redacted]`. */
export function redactUrl(url: string): string {
  if (!MAYBE_SECRET.test(url)) return url;
  const mark = url.indexOf('?');
  const path = mark === -1 ? url : url.slice(0, mark);
  const secretPath = SECRET_PATH.exec(decodedOrAsIs(path));
  const shownPath = secretPath ? `${secretPath[1]}${REDACTED}` : path;
  return mark === -1 ? shownPath : `${shownPath}?${redactQuery(url.slice(mark + 1))}`;
}

/** Fields every pino line has, not worth repeating on a terminal. */
const HIDDEN = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'reqId', 'err', 'request', 'mail']);
const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };

const paint = (on: boolean, code: number, text: string) => (on ? `\u001b[${code}m${text}\u001b[0m` : text);

function statusColor(status: number): number {
  if (status >= 500) return 31; // red
  if (status >= 400) return 33; // yellow
  if (status >= 300) return 36; // cyan
  return 32; // green
}

function extras(line: Record<string, unknown>): string {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(line)) {
    if (HIDDEN.has(key) || value === undefined) continue;
    parts.push(`${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`);
  }
  return parts.length ? ` ${parts.join(' ')}` : '';
}

/** One pino JSON line as the terminal shows it (without the final newline). */
export function formatLogLine(json: string, color = false): string {
  let line: Record<string, unknown>;
  try {
    line = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.trimEnd();
  }
  const time = typeof line.time === 'number' ? new Date(line.time).toISOString().slice(11, 19) : '--:--:--';
  const level = typeof line.level === 'number' ? line.level : 30;
  const head = paint(color, 2, time);
  const request = line.request as { method?: string; url?: string; statusCode?: number; ms?: number } | undefined;
  if (request && typeof request.statusCode === 'number') {
    const ms = typeof request.ms === 'number' ? `${request.ms < 10 ? request.ms.toFixed(1) : Math.round(request.ms)} ms` : '';
    const said = `${head} ${request.method} ${request.url} ${paint(color, statusColor(request.statusCode), String(request.statusCode))} ${paint(color, 2, ms)}`;
    return line.err ? `${said}${stackOf(line.err)}` : said;
  }
  const label = level >= 40 ? `${paint(color, level >= 50 ? 31 : 33, LEVELS[level] ?? String(level))} ` : level < 30 ? `${LEVELS[level] ?? level} ` : '';
  let text = `${head} ${label}${String(line.msg ?? '')}${extras(line)}`;
  const mail = line.mail as { to?: string; from?: string; subject?: string; text?: string } | undefined;
  if (mail) text += `\n  To: ${mail.to}\n  From: ${mail.from}\n  Subject: ${mail.subject}\n\n${String(mail.text ?? '').replace(/^/gm, '  ')}`;
  if (line.err) text += stackOf(line.err);
  return text;
}

/** An error's stack (pino's `err`), indented under its line. */
function stackOf(err: unknown): string {
  const { stack, message } = err as { stack?: string; message?: string };
  return `\n${String(stack ?? message ?? '').replace(/^/gm, '  ')}`;
}

/** A pino destination writing `out` human lines. */
export function prettyLogStream(out: Writable & { isTTY?: boolean }): { write(chunk: string): void } {
  const color = out.isTTY === true;
  return {
    write(chunk: string) {
      for (const json of chunk.split('\n')) if (json.trim() !== '') out.write(`${formatLogLine(json, color)}\n`);
    },
  };
}

/**
 * Fastify's request logging on a terminal: nothing when a request comes in, one line when it is
 * answered (method, URL, status, duration), at error level when the answer failed.
 */
export class TerminalLogController extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const line = { request: { method: request.method, url: redactUrl(request.url), statusCode: reply.statusCode, ms: reply.elapsedTime } };
    if (error) reply.log.error({ ...line, err: error }, 'request errored');
    else reply.log.info(line, 'request');
  }
}

/** The program a request acted for (API token, or the dashboard's program), for its log line. */
function programOf(request: FastifyRequest): string | undefined {
  const auth = (request as { auth?: { program?: { id?: string } } | null }).auth;
  const page = (request as { dashboardProgram?: { program?: { id?: string } } | null }).dashboardProgram;
  return auth?.program?.id ?? page?.program?.id;
}

/**
 * Fastify's request logging as JSON (LOG_FORMAT=json): one line per request, when it is
 * answered, with what an operator needs — method, route, URL, status, time, the request id
 * (the logger's reqId) and the program — and never the headers (no token or cookie to redact,
 * and no per-request work serialising them).
 */
export class RequestLogController extends LogController {
  // Arrivals only at debug level (LOG_LEVEL=debug): at info, pino's debug is a no-op.
  override incomingRequest(request: FastifyRequest): void {
    request.log.debug({ method: request.method, url: redactUrl(request.url) }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const line = { method: request.method, route: request.routeOptions.url, url: redactUrl(request.url), status: reply.statusCode, ms: Math.round(reply.elapsedTime * 100) / 100, program: programOf(request) };
    if (error) reply.log.error({ ...line, err: error }, 'request errored');
    else reply.log.info(line, 'request');
  }
}

/**
 * The server's pino options. Request lines carry no headers; should a header set ever be logged
 * as `req.headers`, tokens and cookies are replaced before they reach the log.
 */
/**
 * JSON lines to stdout, gathered and written in blocks of a few kilobytes (tens of lines) off
 * the main thread instead of one blocking write per line: measured ~5 µs of system time per
 * request otherwise. A quiet server's lines still go out within LOG_FLUSH_MS; pino writes
 * what is left synchronously when the process exits, crashing included.
 */
const LOG_BLOCK_BYTES = 8 * 1024;
const LOG_FLUSH_MS = 100;

function jsonLogDestination(): DestinationStream {
  return pino.destination({ dest: 1, sync: false, minLength: LOG_BLOCK_BYTES, periodicFlush: LOG_FLUSH_MS });
}

export function loggerOptions(config: Pick<Config, 'logLevel' | 'logFormat'>, out: Writable & { isTTY?: boolean } = process.stdout) {
  return {
    level: config.logLevel,
    serializers: {
      // A failed request's error line (Fastify's default error log) names the request, not its headers.
      req: (request: FastifyRequest) => ({ method: request.method, url: redactUrl(request.url), remoteAddress: request.ip }),
    },
    redact: { paths: ['req.headers.authorization', 'req.headers.cookie', 'req.headers["set-cookie"]'], censor: '[redacted]' },
    // LOG_FORMAT=pretty (a terminal): human lines instead of JSON.
    ...(config.logFormat === 'pretty' ? { stream: prettyLogStream(out) } : out === process.stdout ? { stream: jsonLogDestination() } : { stream: out }),
  };
}
