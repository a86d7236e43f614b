import { SMTPServer } from 'smtp-server';
import { simpleParser } from 'mailparser';

// A real SMTP server for tests (npm smtp-server on 127.0.0.1, plain SMTP, no TLS or login):
// what Tandem sends arrives here as it would at any mail server, parsed back into its parts.

export interface Received {
  from: string;
  to: string[];
  subject: string;
  text: string;
  html: string;
}

export interface SmtpReceiver {
  url: string;
  received: Received[];
  /** Refuse the next `n` messages with a temporary failure (451). */
  refuseNext(n: number): void;
  waitFor(match: (mail: Received) => boolean, what: string, ms?: number): Promise<Received>;
  close(): Promise<void>;
}

/** A real SMTP server on 127.0.0.1: plain SMTP, no TLS or login (local tests only). */
export async function startSmtpReceiver(): Promise<SmtpReceiver> {
  const received: Received[] = [];
  let refusals = 0;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onRcptTo(_address, _session, callback) {
      if (refusals > 0) {
        refusals--;
        const error = Object.assign(new Error('Try again later'), { responseCode: 451 });
        return callback(error);
      }
      callback();
    },
    onData(stream, session, callback) {
      simpleParser(stream)
        .then((parsed) => {
          received.push({
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            to: session.envelope.rcptTo.map((r) => r.address),
            subject: parsed.subject ?? '',
            text: parsed.text ?? '',
            html: typeof parsed.html === 'string' ? parsed.html : '',
          });
          callback();
        })
        .catch(callback);
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as { port: number }).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    refuseNext(n) {
      refusals = n;
    },
    async waitFor(match, what, ms = 15_000) {
      const until = Date.now() + ms;
      while (Date.now() < until) {
        const found = received.find(match);
        if (found) return found;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      throw new Error(`no e-mail: ${what} (received ${JSON.stringify(received.map((r) => [r.to, r.subject]))})`);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

