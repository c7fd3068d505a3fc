import { endpointAllows, endpointOverlapsRoute, parseEndpoint } from '../../api/http/endpoints';
import { permissionsOf, withinCeiling } from '../../api/auth/roles';

describe('allowed endpoints', () => {
  const start = parseEndpoint('POST /api/rollouts/{id}/start')!;

  test('{x} matches exactly one segment', () => {
    expect(endpointAllows(start, 'POST', '/api/rollouts/r1/start')).toBe(true);
    expect(endpointAllows(start, 'GET', '/api/rollouts/r1/start')).toBe(false);
    expect(endpointAllows(start, 'POST', '/api/rollouts/r1/pause')).toBe(false);
    expect(endpointAllows(start, 'POST', '/api/rollouts/a/b/start')).toBe(false);
    expect(endpointAllows(start, 'POST', '/api/rollouts//start')).toBe(false);
  });

  test('GET entries admit HEAD', () => {
    expect(endpointAllows(parseEndpoint('GET /api/tenant')!, 'HEAD', '/api/tenant')).toBe(true);
  });

  test('malformed entries are refused', () => {
    for (const entry of [
      'post /api/x',
      'POST api/x',
      'POST /other/x',
      'FETCH /api/x',
      'POST /api/x?y=1',
      'POST  /api/x',
    ]) {
      expect(parseEndpoint(entry)).toBeUndefined();
    }
  });

  test('an entry overlaps a route when segments agree or either is a parameter', () => {
    expect(endpointOverlapsRoute(start, 'post', '/api/rollouts/{id}/start')).toBe(true);
    expect(
      endpointOverlapsRoute(parseEndpoint('POST /api/rollouts/r-1/start')!, 'post', '/api/rollouts/{id}/start'),
    ).toBe(true);
    expect(endpointOverlapsRoute(start, 'post', '/api/rollouts/{id}/pause')).toBe(false);
  });
});

describe('roles', () => {
  test('role ceiling: a role may be granted only by someone holding all it grants', () => {
    expect(withinCeiling('admin', permissionsOf(['admin']))).toBe(true);
    expect(withinCeiling('viewer', permissionsOf(['operator']))).toBe(true);
    expect(withinCeiling('auditor', permissionsOf(['operator']))).toBe(false);
    expect(withinCeiling('admin', permissionsOf(['auditor', 'operator']))).toBe(false);
    expect(withinCeiling('peer', permissionsOf(['viewer']))).toBe(false);
  });
});
