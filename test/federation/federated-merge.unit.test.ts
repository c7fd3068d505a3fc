import type { PeerRow } from '../../db/repos/federation-peers';
import { mergePage } from '../../api/routes/federation/agents';

const peer = (name: string, id: string) => ({ id, name }) as PeerRow;
const B = peer('bravo', '00000000-0000-4000-8000-00000000000b');
const C = peer('charlie', '00000000-0000-4000-8000-00000000000c');
const agent = (n: number) => ({ id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}` });
const ids = (items: Array<{ id: string; peer: { name: string } }>) =>
  items.map((item) => `${item.peer.name}:${Number(item.id.slice(-12))}`);

test('takes the smallest ids across peers; each peer moves to the last id taken from it', () => {
  const page = mergePage(
    [
      { peer: B, status: 'ok', items: [agent(1), agent(4), agent(5)], more: true },
      { peer: C, status: 'ok', items: [agent(2), agent(3), agent(6)], more: false },
    ],
    {},
    3,
  );
  expect(ids(page.items)).toEqual(['bravo:1', 'charlie:2', 'charlie:3']);
  expect(page.positions).toEqual({ [B.id]: agent(1).id, [C.id]: agent(3).id });
  expect(page.more).toBe(true);
});

test('a peer all of whose last agents were taken is done; nothing taken leaves its place as it was', () => {
  const page = mergePage(
    [
      { peer: B, status: 'ok', items: [agent(7), agent(8)], more: true },
      { peer: C, status: 'ok', items: [agent(2)], more: false },
    ],
    { [B.id]: agent(6).id },
    1,
  );
  expect(ids(page.items)).toEqual(['charlie:2']);
  expect(page.positions).toEqual({ [B.id]: agent(6).id, [C.id]: null });
  expect(page.more).toBe(true);
});

test('the same id at two peers comes once from each, by peer name; the list ends when every peer is done', () => {
  const page = mergePage(
    [
      { peer: C, status: 'ok', items: [agent(1)], more: false },
      { peer: B, status: 'ok', items: [agent(1)], more: false },
    ],
    {},
    10,
  );
  expect(ids(page.items)).toEqual(['bravo:1', 'charlie:1']);
  expect(page.positions).toEqual({ [B.id]: null, [C.id]: null });
  expect(page.more).toBe(false);
});

test('a peer that did not answer is left out of the rest of the listing: no next page waits on it', () => {
  const page = mergePage(
    [
      { peer: B, status: 'timeout', error: 'no answer' },
      { peer: C, status: 'ok', items: [agent(2)], more: false },
    ],
    { [B.id]: agent(1).id },
    10,
  );
  expect(ids(page.items)).toEqual(['charlie:2']);
  expect(page.positions).toEqual({ [B.id]: false, [C.id]: null });
  expect(page.more).toBe(false);
});

test('while another peer has more, the listing goes on without the one that failed', () => {
  const page = mergePage(
    [
      { peer: B, status: 'unreachable', error: 'refused' },
      { peer: C, status: 'ok', items: [agent(2), agent(3)], more: true },
    ],
    {},
    2,
  );
  expect(ids(page.items)).toEqual(['charlie:2', 'charlie:3']);
  expect(page.positions).toEqual({ [B.id]: false, [C.id]: agent(3).id });
  expect(page.more).toBe(true);
});
