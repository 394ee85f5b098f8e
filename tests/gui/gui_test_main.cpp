// Catch2 main for the GUI tests: one QApplication (offscreen unless QT_QPA_PLATFORM says otherwise)
// for the whole run, then the Catch session.
#define CATCH_CONFIG_RUNNER
#include <QApplication>
#include <catch2/catch.hpp>

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  return Catch::Session().run(argc, argv);
}
