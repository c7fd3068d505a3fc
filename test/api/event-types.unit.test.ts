/** The document's pattern for `GET /api/events?type=` says what the route accepts. */
import { TYPE_PATTERN, typeListPattern, unknownPattern } from '../../api/hub/event-types';
import { TRIMMED_SPACE } from '../../api/http/text';
import { EVENT_TYPES } from '../../db/repos/events';

const accepted = (list: string) =>
  list
    .split(',')
    .map((entry) => entry.trim())
    .every((entry) => TYPE_PATTERN.test(entry) && unknownPattern(entry) === undefined);

const pattern = typeListPattern(TRIMMED_SPACE);

test.each([
  ...EVENT_TYPES,
  '*',
  'rollout.*',
  'git.sync-run.*',
  ' rollout.started ,agent.connected',
  'rollot.*',
  'rollout.started,',
  '',
  'git.*.*',
  '**',
  'rollout.started.*',
  'a,b',
])('%j', (list) => expect(pattern.test(list)).toBe(accepted(list)));
