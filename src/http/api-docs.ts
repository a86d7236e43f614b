import type { FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { Config } from '../config.ts';

/**
 * The OpenAPI 3.1 document is generated from the route schemas (served at
 * /api/v1/openapi.json); /docs renders it with Swagger UI from npm-installed assets.
 */
export async function registerApiDocs(app: FastifyInstance, config: Config): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Tandem API',
        version: '1.0.0',
        description: 'Affiliates, links, referrals, sales, coupons and promotional codes of one affiliate program. Every call needs `Authorization: Bearer <token>`; the token decides the program.',
      },
      servers: [{ url: config.siteUrl }],
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
    hideUntagged: false,
  });
  await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: true, uiConfig: { docExpansion: 'list', deepLinking: true } });
  app.get('/api/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
