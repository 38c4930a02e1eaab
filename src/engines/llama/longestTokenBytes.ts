import { LlamaVocabularyType, type LlamaModel, type Token } from "node-llama-cpp";

/**
 * The most UTF-8 bytes one token of this model's vocabulary stands for, read once at load;
 * undefined where no such bound holds for input text.
 *
 * It makes a character bound sound: SentencePiece and byte-level BPE vocabularies turn every
 * byte of the input into some token (byte fallback), so an input of N UTF-16 code units
 * (each at least one UTF-8 byte) has at least N / longest tokens, and an input longer than
 * `tokens × longest` characters cannot fit `tokens`. WordPiece and Unigram vocabularies can
 * drop characters (whitespace, accents) or map a whole unknown word to one token, so they get
 * no bound (their inputs are measured in bounded chunks instead).
 */
export function longestTokenBytes(model: LlamaModel): number | undefined {
  if (model.vocabularyType !== LlamaVocabularyType.spm && model.vocabularyType !== LlamaVocabularyType.bpe) return undefined;
  const size = model.fileInfo.metadata.tokenizer?.ggml?.tokens?.length ?? 0;
  if (size === 0) return undefined;
  // An unknown character becomes one token: at most 4 bytes, whatever the vocabulary.
  let longest = 4;
  for (let token = 0; token < size; token++) {
    // Special tokens as their text: a longer piece only loosens the bound.
    longest = Math.max(longest, Buffer.byteLength(model.detokenize([token as Token], true)));
  }
  return longest;
}
