// The `meridian` command-line client. Everything but the entry point lives in MeridianCLI.

internal import MeridianCLI

await MeridianMain.run()
