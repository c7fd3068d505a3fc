/**
 * A list's view in the URL's query (`?state=paused&cursor=…`), named as the API's own query
 * parameters, so a view can be bookmarked, shared and reloaded. Empty values are left out.
 */
export function searchOf(query: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(query).filter((entry): entry is [string, string] => Boolean(entry[1])));
}
