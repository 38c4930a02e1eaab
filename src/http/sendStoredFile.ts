import type { NextFunction, Response } from "express";
import { resolve } from "node:path";
import { NotFoundError } from "../errors.js";

/**
 * Sends a stored file (a finished job's media) streamed from disk, never read whole into memory:
 * an audio job of 100,000 characters is about two hours of audio, hundreds of MB as WAV, and a
 * body sent in one piece was read and hashed (for its ETag) on the event loop, and held in memory
 * once per retrieve. Range requests are answered (206); the Content-Type set before is kept.
 */
export function sendStoredFile(res: Response, path: string, next: NextFunction): void {
  // dotfiles: the data directory may well be under a dot directory (~/.local/share); cacheControl: paid media, never a shared cache's.
  res.sendFile(resolve(path), { dotfiles: "allow", cacheControl: false }, (error?: Error & { code?: string }) => {
    if (!error || res.headersSent) return;
    next(error.code === "ENOENT" ? new NotFoundError("the finished media is no longer stored (deleted, or past its retention)") : error);
  });
}
