import { posix } from 'node:path';
import type { Format } from '../configurations/content';

/**
 * Which files of a source's tree become configurations, and under which names: every
 * `.yaml`, `.yml` or `.json` file under the source's `path`, named by its path relative to
 * `path` without the extension (`prod/otel-collector.yaml` → `prod/otel-collector`).
 */

/** More files than this under `path` fail the whole run: such a tree is not a set of configurations. */
export const MAX_SOURCE_FILES = 1_000;

const FORMAT_OF: Record<string, Format> = { '.yaml': 'yaml', '.yml': 'yaml', '.json': 'json' };

/** What a configuration name may be (the configurations API's rule). */
const NAME = /^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$/;

export interface SourceFile {
  /** The file's path in the repository. */
  path: string;
  /** The configuration's name. */
  name: string;
  format: Format;
}

/** The source's `path` as a tree prefix: no leading or trailing slash; '' is the whole tree. */
export const normalizeSourcePath = (path: string) => path.replace(/^\/+|\/+$/g, '');

/** The configuration a file of the tree becomes, or undefined when it is not a configuration file. */
export function sourceFileOf(
  sourcePath: string,
  filePath: string,
): SourceFile | { path: string; error: string } | undefined {
  const format = FORMAT_OF[posix.extname(filePath).toLowerCase()];
  if (!format) return undefined;
  const prefix = normalizeSourcePath(sourcePath);
  const relative = prefix ? posix.relative(prefix, filePath) : filePath;
  const name = relative.slice(0, -posix.extname(relative).length);
  if (!NAME.test(name))
    return {
      path: filePath,
      error: `'${name}' is not a configuration name (1-200 of A-Z a-z 0-9 . _ / -, starting with a letter or digit)`,
    };
  return { path: filePath, name, format };
}

/** A chain of symbolic links longer than this is an error (as the kernel's ELOOP, well before a cycle matters). */
export const MAX_LINK_HOPS = 8;

/**
 * The path in the tree a symbolic link at `linkPath` points to (its blob is the link's text),
 * or the link's error when it leaves the source's path: a link is followed only to a file the
 * source holds itself, never to another part of the repository or outside it.
 */
export function linkTarget(sourcePath: string, linkPath: string, target: string): string | { error: string } {
  const prefix = normalizeSourcePath(sourcePath);
  const where = prefix ? `the source's path '${prefix}'` : 'the repository';
  if (target.startsWith('/')) return { error: `a symbolic link to '${target}', outside ${where}` };
  const resolved = posix.normalize(posix.join(posix.dirname(linkPath), target));
  const inside = prefix ? resolved.startsWith(`${prefix}/`) : resolved !== '..' && !resolved.startsWith('../');
  if (!inside) return { error: `a symbolic link to '${target}', outside ${where}` };
  return resolved;
}

/**
 * Files of one tree whose names collide (`dup.yaml` and `dup.yml` both name `dup`): each is
 * an error naming the others, and none of them applies; answers the errors by path.
 */
export function collidingNames(files: Array<{ path: string; name: string }>): Map<string, string> {
  const byName = new Map<string, string[]>();
  for (const file of files) byName.set(file.name, [...(byName.get(file.name) ?? []), file.path]);
  const errors = new Map<string, string>();
  for (const [name, paths] of byName) {
    if (paths.length < 2) continue;
    for (const path of paths) {
      const others = paths.filter((other) => other !== path).map((other) => `'${other}'`);
      errors.set(
        path,
        `'${path}' and ${others.join(' and ')} both name the configuration '${name}'; rename or remove all but one`,
      );
    }
  }
  return errors;
}
