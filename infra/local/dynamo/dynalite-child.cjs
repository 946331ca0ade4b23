// The child-process side of startDynalite({ process: 'child' }) (./dynalite.ts): runs dynalite in its
// own Node process so its CPU (request parsing, condition expressions, LevelDB) uses another core than
// the process that hosts the front, the stream delivery and the functions.
//
// Plain CommonJS on purpose: it imports nothing of ours, and starting it needs no TypeScript loader
// (node + dynalite starts in ~0.12 s here; through tsx ~0.38 s, paid by every test suite that starts it).
//
// Protocol (IPC, the channel child_process.fork opens):
//   argv[2]   JSON { host, path?, tableStateMs }
//   child  -> { type: 'listening', port }        once dynalite listens
//   parent -> { type: 'close' }                   close dynalite (flushes LevelDB with a path), exit 0
// A failure to start is written to stderr and the child exits 1; the parent rejects with that text.
// The child exits when the IPC channel closes ('disconnect'): the parent exited, crashed or was
// SIGKILLed, so no orphan keeps a port or a LevelDB lock.
'use strict';

let server;
let closing = false;

function fail(message) {
  process.stderr.write(`dynalite child: ${message}\n`);
  process.exit(1);
}

function closeAndExit() {
  if (closing) return;
  closing = true;
  if (!server || !server.listening) process.exit(0);
  server.closeAllConnections();
  server.close((error) => {
    if (error) process.stderr.write(`dynalite child: close failed: ${error.message}\n`);
    process.exit(error ? 1 : 0);
  });
}

// dynalite parses every ConditionExpression / FilterExpression with a PEG parser and no cache; a
// profile of the child during an e2e change had 68% of its CPU there, and one condition this project
// writes for every decision (common/store/aggregates.ts, decision freshness) takes 16-25 ms to parse.
// The parse is a pure function of the expression, the names and the values it references (values
// are resolved into the tree), so results are cached under exactly those. On a hit the parser's one
// side effect is replayed: the referenced names and values are marked used (dynalite rejects
// requests with unused ones). Key conditions are never cached: dynalite rewrites their tree in place
// (validations/index.js, checkExpr); condition and filter trees are only read (db/index.js,
// matchesExprFilter). Failed parses (an error string or a throw) are not cached.
const PARSE_CACHE_MAX_ENTRIES = 2000;
const NAME_TOKEN = /#[0-9A-Za-z_]+/g;
const VALUE_TOKEN = /:[0-9A-Za-z_]+/g;

function cacheConditionParses(conditionParser) {
  const parse = conditionParser.parse;
  const cache = new Map();
  conditionParser.parse = function cachedParse(input, options) {
    const context = options && options.context;
    if (typeof input !== 'string' || !context || context.isKeyCondition) return parse.call(this, input, options);
    const names = [...new Set(input.match(NAME_TOKEN) || [])];
    const values = [...new Set(input.match(VALUE_TOKEN) || [])];
    const attrNames = context.attrNames || {};
    const attrVals = context.attrVals || {};
    const key = JSON.stringify([input, names.map((n) => attrNames[n] ?? null), values.map((v) => attrVals[v] ?? null)]);
    const cached = cache.get(key);
    if (cached !== undefined) {
      for (const n of names) if (context.unusedAttrNames) delete context.unusedAttrNames[n];
      for (const v of values) if (context.unusedAttrVals) delete context.unusedAttrVals[v];
      return cached;
    }
    const result = parse.call(this, input, options);
    if (result !== null && typeof result === 'object') {
      if (cache.size >= PARSE_CACHE_MAX_ENTRIES) cache.clear();
      cache.set(key, result);
    }
    return result;
  };
}

function main() {
  if (typeof process.send !== 'function') fail('must be started with child_process.fork (no IPC channel)');
  let options;
  try {
    options = JSON.parse(process.argv[2] ?? '');
  } catch (error) {
    fail(`bad options argument: ${error.message}`);
  }
  if (typeof options !== 'object' || options === null || typeof options.host !== 'string' || typeof options.tableStateMs !== 'number') {
    fail(`bad options argument: ${process.argv[2]}`);
  }
  if (options.path !== undefined && typeof options.path !== 'string') fail('bad options argument: path must be a string');

  process.on('disconnect', closeAndExit);
  process.on('message', (message) => {
    if (message && message.type === 'close') closeAndExit();
  });
  // The parent owns the lifecycle; a terminal's Ctrl-C reaches the whole process group, and the parent
  // then closes us through IPC (an ignored SIGINT keeps LevelDB from being cut mid-write).
  process.on('SIGINT', () => undefined);

  cacheConditionParses(require('dynalite/db/conditionParser'));
  const dynalite = require('dynalite');
  server = dynalite({
    ...(options.path === undefined ? {} : { path: options.path }),
    createTableMs: options.tableStateMs,
    deleteTableMs: options.tableStateMs,
    updateTableMs: options.tableStateMs,
  });
  // As dynalite.ts DYNALITE_KEEP_ALIVE_MS: idle front sockets stay open, so reusing one does not race a
  // server-side close (a lost image read costs the front a stream record).
  server.keepAliveTimeout = 10 * 60_000;
  server.once('error', (error) => fail(`listen on ${options.host} failed: ${error.message}`));
  server.listen(0, options.host, () => {
    server.removeAllListeners('error');
    server.on('error', (error) => process.stderr.write(`dynalite child: server error: ${error.message}\n`));
    process.send({ type: 'listening', port: server.address().port });
  });
}

main();
