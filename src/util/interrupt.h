// util/interrupt.h: turning Ctrl-C / SIGTERM into an orderly stop.
// Owns: the process-wide "stop requested" flag and its signal handlers. Long loops call
// throw_if_interrupted(), which throws a UserError so that RAII cleanup (AtomicFile, AtomicDir)
// removes partial output. A second signal while stopping kills the process the default way; one
// within a second of the first counts as the same request (a signal delivered twice at once).
#pragma once

namespace slm {

void install_interrupt_handlers();  // SIGINT and SIGTERM
bool interrupted();
int interrupt_signal();  // the signal received, 0 if none
void throw_if_interrupted();

}  // namespace slm
