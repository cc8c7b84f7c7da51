/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * pokelab torture (tools/torture/torture.cpp). Task context, main thread.
 */
#pragma once

namespace CLI {
class App;
}

namespace pokelab::torture {

/* Adds "torture [options] [BOOT-PARAM ...]" to @app. */
void addTortureCommand(CLI::App &app);
/* After parse: was it chosen? Run it: 0 SUCCESS, 1 FAILURE, 2 bad arguments. */
bool tortureParsed();
int runTorture();

} /* namespace pokelab::torture */
