import { Option, type Command } from "commander";
import { SERVER_SETTINGS, type ServerSettingName } from "../config/serverSettings.js";

/** Adds a server setting as a flag whose help text names its environment variable and default. */
export function addSettingOption(command: Command, name: ServerSettingName): Command {
  const setting = SERVER_SETTINGS[name];
  const fallback = setting.default === "" ? "" : `, default ${setting.default}`;
  return command.addOption(new Option(setting.flag, `${setting.description} (env ${setting.env}${fallback})`));
}

export type SettingFlags = Partial<Record<ServerSettingName, string>>;

/** Commander names options after their flags (--config -> "config"); map them back to setting names. */
export function settingFlags(options: Record<string, unknown>): SettingFlags {
  const flags: SettingFlags = {};
  for (const [name, setting] of Object.entries(SERVER_SETTINGS) as [ServerSettingName, (typeof SERVER_SETTINGS)[ServerSettingName]][]) {
    const value = options[new Option(setting.flag).attributeName()];
    if (typeof value === "string") flags[name] = value;
  }
  return flags;
}
