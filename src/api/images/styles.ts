import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { z } from "zod";
import { ConfigError } from "../../config/ConfigError.js";
import { PACKAGE_ROOT } from "../../config/packageRoot.js";

/**
 * Style presets (GET /image/styles, `style_preset`): image-styles.json next to the model
 * registry, else the bundled one. A preset's prompt is a template: `{prompt}` is replaced
 * by the request's prompt (without it, the preset is appended); its negative prompt is
 * added to the request's.
 */

export const STYLES_FILE = "image-styles.json";

const StylePreset = z.strictObject({
  name: z.string().min(1),
  prompt: z.string().default("{prompt}"),
  negative_prompt: z.string().default(""),
});
export type StylePreset = z.infer<typeof StylePreset>;

const StylesFile = z.strictObject({ $schema: z.string().optional(), styles: z.array(StylePreset) });

export class ImageStyles {
  private readonly byName: Map<string, StylePreset>;

  constructor(
    readonly presets: readonly StylePreset[],
    readonly source: string,
  ) {
    this.byName = new Map(presets.map((p) => [p.name.toLowerCase(), p]));
  }

  /** The file beside the registry (`<config dir>/image-styles.json`), else the bundled defaults. */
  static load(registryPath: string): ImageStyles {
    const beside = join(dirname(registryPath), STYLES_FILE);
    const path = existsSync(beside) ? beside : join(PACKAGE_ROOT, STYLES_FILE);
    let json: unknown;
    try {
      json = JSON.parse(readFileSync(path, "utf8"));
    } catch (error) {
      throw new ConfigError(`${path}: ${(error as Error).message}`);
    }
    const parsed = StylesFile.safeParse(json);
    if (!parsed.success) throw new ConfigError(parsed.error.issues.map((i) => `${path}: ${i.path.join(".")}: ${i.message}`).join("\n"));
    return new ImageStyles(parsed.data.styles, path);
  }

  names(): string[] {
    return this.presets.map((p) => p.name);
  }

  find(name: string): StylePreset | undefined {
    return this.byName.get(name.toLowerCase());
  }
}

export function applyStyle(style: StylePreset, prompt: string, negativePrompt: string): { prompt: string; negativePrompt: string } {
  const styled = style.prompt.includes("{prompt}") ? style.prompt.replaceAll("{prompt}", prompt) : `${prompt}, ${style.prompt}`;
  const negative = [negativePrompt, style.negative_prompt].filter((p) => p.length > 0).join(", ");
  return { prompt: styled, negativePrompt: negative };
}
