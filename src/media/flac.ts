/**
 * ffmpeg writes FLAC to a pipe without seeking back, so STREAMINFO's total-samples field stays 0
 * ("unknown") and players and ffprobe show no duration. For a whole file the sample count is
 * known: this writes it into the 36-bit field (STREAMINFO bytes 13.5 to 17; the block starts at
 * byte 8, after "fLaC" and the 4-byte block header), in place: the file is the caller's own
 * (a copy of a 17-minute FLAC was 47 MB more on the event loop).
 */
export function setFlacTotalSamples(flac: Buffer, inputSamples: number, inputSampleRate: number): Buffer {
  if (flac.length < 42 || flac.toString("latin1", 0, 4) !== "fLaC" || (flac[4]! & 0x7f) !== 0) return flac;
  const info = 8;
  const sampleRate = (flac[info + 10]! << 12) | (flac[info + 11]! << 4) | (flac[info + 12]! >> 4);
  const total = sampleRate === inputSampleRate ? inputSamples : Math.round((inputSamples * sampleRate) / inputSampleRate);
  flac[info + 13] = (flac[info + 13]! & 0xf0) | (Math.floor(total / 2 ** 32) & 0x0f);
  flac.writeUInt32BE(total % 2 ** 32, info + 14);
  return flac;
}
