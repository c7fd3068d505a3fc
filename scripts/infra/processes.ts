/** Whether a process with this pid exists (a killed child counts until its parent has reaped it). */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
