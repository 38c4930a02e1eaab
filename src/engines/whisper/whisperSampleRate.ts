/**
 * Whisper hears 16 kHz mono. Its own module so that the main thread's WhisperWorkerEngine does
 * not import WhisperEngine, and with it transformers.js, which only its worker needs.
 */
export const WHISPER_SAMPLE_RATE = 16000;
