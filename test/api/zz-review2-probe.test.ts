import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { createAgentListener, type AgentListener } from '../../api/opamp/listener';
import { startTestApp, type TestApp } from '../support/app';
import { description, newInstanceUid, postHttp, uidToUuid } from '../support/opamp-client';
import { runExpression, checkExpression } from '../../api/policies/cel';

let t: TestApp;
let op: string;
let listener: AgentListener;
let httpUrl: string;
const log: string[] = [];
const note = (label: string, r: { status: number; body?: unknown }) => log.push(`${label} -> ${r.status} ${JSON.stringify(r.body).slice(0, 160)}`);

beforeAll(async () => {
  t = await startTestApp();
  op = await t.token('default.operator');
  listener = createAgentListener({ db: t.database.db, logger: pino({ level: 'silent' }), settings: t.settings });
  await new Promise<void>((resolve) => listener.server.listen(0, '127.0.0.1', resolve));
  httpUrl = `http://127.0.0.1:${(listener.server.address() as AddressInfo).port}/v1/opamp`;
});
afterAll(async () => {
  console.log(log.join('\n'));
  await listener?.close();
  await t?.close();
});

test('probes', async () => {
  note('group name NUL', await t.call('POST', '/api/groups', { token: op, body: { name: 'a\u0000b' } }));
  note('group desc NUL', await t.call('POST', '/api/groups', { token: op, body: { name: 'x1', description: 'a\u0000' } }));
  note('group label val NUL', await t.call('POST', '/api/groups', { token: op, body: { name: 'x2', labels: { k: 'v\u0000' } } }));
  note('groups q NUL', await t.call('GET', '/api/groups?q=%00', { token: op }));
  note('groups label NUL', await t.call('GET', '/api/groups?label=k:%00', { token: op }));
  note('agents q NUL', await t.call('GET', '/api/agents?q=%00', { token: op }));
  note('agents label NUL', await t.call('GET', '/api/agents?label=k:%00', { token: op }));
  note('agents version huge', await t.call('GET', `/api/agents?configurationId=${'0'.repeat(8)}-0000-4000-8000-000000000000&version=99999999999`, { token: op }));
  note('cfg q NUL', await t.call('GET', '/api/configurations?q=%00', { token: op }));
  note('cfg label NUL', await t.call('GET', '/api/configurations?label=k:%00', { token: op }));
  note('cfg desc NUL', await t.call('POST', '/api/configurations', { token: op, body: { name: 'c0', format: 'json', description: '\u0000' } }));
  note('cfg label val NUL', await t.call('POST', '/api/configurations', { token: op, body: { name: 'c00', format: 'json', labels: { a: '\u0000' } } }));
  note('policy desc NUL', await t.call('POST', '/api/policies', { token: op, body: { name: 'p0', expression: 'true', description: '\u0000' } }));
  note('policy expr NUL', await t.call('POST', '/api/policies', { token: op, body: { name: 'p00', expression: 'true || "\u0000" == ""' } }));

  const cfg = await t.call('POST', '/api/configurations', { token: op, body: { name: 'deep', format: 'json' } });
  note('cfg create', cfg);
  const deep = '['.repeat(150000) + ']'.repeat(150000);
  note('draft deep json 1', await t.call('POST', `/api/configurations/${cfg.body.id}/versions`, { token: op, body: { content: deep } }));
  note('draft deep json 2', await t.call('POST', `/api/configurations/${cfg.body.id}/versions`, { token: op, body: { content: deep } }));
  note('compare deep', await t.call('GET', `/api/configurations/${cfg.body.id}/versions/compare?from=1&to=2`, { token: op }));
  note('evaluate version huge', await t.call('POST', '/api/policies/evaluate', { token: op, body: { configurationId: cfg.body.id, version: 1e15, target: { groupIds: [cfg.body.id] } } }));
  note('evaluate version 2^31', await t.call('POST', '/api/policies/evaluate', { token: op, body: { configurationId: cfg.body.id, version: 2 ** 31, target: { groupIds: [cfg.body.id] } } }));

  const ycfg = await t.call('POST', '/api/configurations', { token: op, body: { name: 'deepy', format: 'yaml' } });
  const t0 = Date.now();
  note('draft deep yaml', await t.call('POST', `/api/configurations/${ycfg.body.id}/versions`, { token: op, body: { content: '['.repeat(100000) + ']'.repeat(100000) } }));
  log.push(`deep yaml ms ${Date.now() - t0}`);
  const t1 = Date.now();
  note('draft deep yaml map', await t.call('POST', `/api/configurations/${ycfg.body.id}/versions`, { token: op, body: { content: Array.from({ length: 5000 }, (_, i) => ' '.repeat(i) + 'a:').join('\n') } }));
  log.push(`deep yaml map ms ${Date.now() - t1}`);

  // opamp: NUL in description
  const tok = await t.call('POST', '/api/tokens', { token: op, body: { name: 'nul' } });
  const uid = newInstanceUid();
  const r = await postHttp(httpUrl, { instanceUid: uid, sequenceNum: 1n, agentDescription: description({ 'service.name': 'a\u0000b' }) } as never, { token: tok.body.token });
  log.push(`opamp NUL desc -> ${r.status}`);
  const row = await t.database.db('agents').where({ id: uidToUuid(uid) }).first();
  const trow = await t.database.db('bootstrap_tokens').where({ id: tok.body.id }).first();
  log.push(`agent row exists=${!!row} token uses=${trow.uses}`);

  // CEL runaway
  const list = '[' + Array.from({ length: 60 }, (_, i) => i).join(',') + ']';
  const expr = `${list}.all(a, ${list}.all(b, ${list}.all(c, ${list}.all(d, true))))`;
  log.push(`cel check ${JSON.stringify(checkExpression(expr))} len=${expr.length}`);
  const t2 = Date.now();
  runExpression(`${list}.all(a, ${list}.all(b, ${list}.all(c, true)))`, {} as never);
  log.push(`cel 3-level 60^3 ms ${Date.now() - t2}`);
  const t3 = Date.now();
  const o = runExpression(`"${'a'.repeat(28)}!".matches("^(a+)+$")`, {} as never);
  log.push(`cel redos ms ${Date.now() - t3} ${JSON.stringify(o)}`);
}, 300000);
