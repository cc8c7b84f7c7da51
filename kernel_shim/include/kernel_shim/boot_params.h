/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The boot parameters a program knows (boot.h registers them): their
 * accepted forms, for a command's help. Task context; allocates.
 */
#pragma once

#include <string>
#include <vector>

namespace kshim {

/*
 * Every registered boot parameter's accepted form and what it sets
 * ("nr_cpus=N: ..."), sorted by name: what `pokelab demo --help-all` lists.
 */
std::vector<std::string> bootParamForms();

/*
 * Where an unknown boot parameter's line sends the user for the list when
 * no known one is near ("pokelab demo --help-all"); set by the program
 * once it knows its command.
 */
void setBootParamsHelpHint(const std::string &hint);

} /* namespace kshim */
