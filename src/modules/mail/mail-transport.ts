import type { Config } from '../../config.ts';

/** What the worker sends: one message, with the instance's From. */
export interface MailMessage {
  from: string;
  to: string;
  subject: string;
  text: string;
  html: string;
}

export interface MailTransport {
  send(message: MailMessage): Promise<void>;
  close(): void;
}

export interface MailLog {
  info(obj: object, msg: string): void;
}

/**
 * SMTP through nodemailer when SMTP_URL is set (bounded: a server that does not answer fails
 * the attempt, which is retried); otherwise every message is written to the log in full, so a
 * local try-out needs no mail server. The SMTP URL (and its password) is never logged.
 */
export async function createMailTransport(config: Pick<Config, 'smtpUrl'>, log: MailLog): Promise<MailTransport> {
  if (config.smtpUrl === null) {
    return {
      async send(message) {
        log.info({ mail: { to: message.to, from: message.from, subject: message.subject, text: message.text } }, 'e-mail written to the log (SMTP_URL is not set)');
      },
      close() {},
    };
  }
  // Loaded only when there is SMTP to speak: a large package a log-only server never needs.
  const { default: nodemailer } = await import('nodemailer');
  const transporter = nodemailer.createTransport({ url: config.smtpUrl, connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 20_000 } as never);
  return {
    async send(message) {
      await transporter.sendMail(message);
    },
    close: () => transporter.close(),
  };
}
