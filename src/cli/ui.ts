import cliProgress from "cli-progress";
import picocolors from "picocolors";

/**
 * Terminal niceties for the CLI. Colours and progress bars only reach a terminal: piped or
 * redirected output stays plain text (no ANSI codes), so scripts and tests read it as is.
 * NO_COLOR (https://no-color.org) turns colours off in a terminal too.
 */
const interactive = (stream: NodeJS.WriteStream) => stream.isTTY === true;
const coloured = (stream: NodeJS.WriteStream) => interactive(stream) && !process.env.NO_COLOR && process.env.TERM !== "dumb";

/** Colours for what goes to stdout / stderr (identity functions when that stream is not a terminal). */
export const out = picocolors.createColors(coloured(process.stdout));
export const err = picocolors.createColors(coloured(process.stderr));

export interface Progress {
  /** `done` of `total` finished; `label` names the item just done. */
  update(done: number, total: number, label?: string): void;
  stop(): void;
}

const NO_PROGRESS: Progress = { update: () => {}, stop: () => {} };

/**
 * A progress bar on stderr (stdout stays for the command's output, e.g. a CSV redirected to a
 * file). Nothing is drawn when stderr is not a terminal.
 */
export function progressBar(title: string): Progress {
  if (!interactive(process.stderr)) return NO_PROGRESS;
  const bar = new cliProgress.SingleBar(
    {
      stream: process.stderr,
      format: `${err.cyan(title)} ${err.dim("[")}{bar}${err.dim("]")} {value}/{total} ${err.dim("{label}")}`,
      barCompleteChar: "\u2588",
      barIncompleteChar: "\u2591",
      hideCursor: true,
      clearOnComplete: false,
      etaBuffer: 20,
    },
    cliProgress.Presets.shades_classic,
  );
  let started = false;
  return {
    update(done, total, label = "") {
      if (!started) {
        bar.start(total, done, { label });
        started = true;
      } else {
        bar.setTotal(total);
        bar.update(done, { label });
      }
    },
    stop() {
      if (started) bar.stop();
    },
  };
}
