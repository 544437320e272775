/**
 * The API's HTTP server, answering HEAD as GET without a HEAD route per GET route.
 *
 * Fastify's own HEAD support (`exposeHeadRoutes`) registers a second route for each of the ~250
 * GET routes, which was about a fifth of the CPU of building the app (a daemon start; the tests
 * start ~200 daemons). Here a HEAD request is routed as its GET instead: it runs the same hooks,
 * access checks and handler, and Node's response to a HEAD request, which knows its method from
 * before the rewrite, sends the headers (Content-Length included) without the body. What differs
 * from Fastify's HEAD routes: the request's method reads GET in hooks and logs, and `inject()`
 * (which bypasses the server) finds no HEAD route.
 */
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { FastifyServerOptions } from 'fastify';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** A Fastify `serverFactory`: the HTTP/1.1 server Fastify would make, with HEAD routed as GET. */
export const headAsGetServer =
  (tls: { key: string | Buffer; cert: string | Buffer } | null) => (handler: Handler, opts: FastifyServerOptions) => {
    const route: Handler = (req, res) => {
      if (req.method === 'HEAD') req.method = 'GET';
      handler(req, res);
    };
    const server = tls ? createHttpsServer({ key: tls.key, cert: tls.cert }, route) : createHttpServer(route);
    // As Fastify sets them on a server of its own making (fastify/lib/server.js getServerInstance).
    server.keepAliveTimeout = opts.keepAliveTimeout ?? 72_000;
    server.requestTimeout = opts.requestTimeout ?? 0;
    server.setTimeout(opts.connectionTimeout ?? 0);
    if (opts.maxRequestsPerSocket) server.maxRequestsPerSocket = opts.maxRequestsPerSocket;
    return server;
  };
