// `kernels init <org>/<name> [DIR] [--backends cpu,cuda,rocm]`: a new package repository
// from the author kit's template, which builds and passes its own test as written.
#include <cstdio>
#include <sstream>

#include "commands.hpp"
#include "kh/author/kit.hpp"
#include "kh/author/scaffold.hpp"
#include "kh/registry/status_error.hpp"
#include "session.hpp"
#include "verb.hpp"

namespace kh::cli {

void add_init_command(CLI::App& app) {
  struct Args {
    author::ScaffoldRequest request;
    std::string backends = "cpu,cuda,rocm";
  };
  const auto verb = add_verb<Args>(
      app, {"init", "Create a new kernel package repository (kernel.json, sources, test, CI)",
            "Then: cd <dir> && git init && git add . && git commit -m init && kernels build\n"
            "(docs/authoring.md goes from here to a published, loaded package)."});
  verb.cmd->add_option("package", verb.args->request.package,
                       "The package's name, <org>/<name> (e.g. acme/scale)")->required();
  verb.cmd->add_option("dir", verb.args->request.dir, "The folder to create (default: ./<name>); must be new or empty");
  verb.cmd->add_option("--backends", verb.args->backends, "Backends to include, comma-separated: cpu, cuda, rocm");
  verb.run([](Args& args) {
    args.request.backends.clear();
    std::stringstream list(args.backends);
    for (std::string word; std::getline(list, word, ',');) {
      const std::string backend = author::package_backend_name(word);
      if (backend.empty())
        fail(KH_ERROR_INVALID_ARGUMENT, "--backends: unknown backend '" + word + "' (the backends are cpu, cuda, rocm)");
      args.request.backends.push_back(backend);
    }
    const author::Kit kit = author::find_kit(KH_VERSION_STRING, settings().author_kit);
    const std::vector<std::string> files = author::scaffold_package(args.request, kit.template_dir());
    const std::string dir = args.request.dir.empty() ? args.request.package.substr(args.request.package.find('/') + 1)
                                                      : args.request.dir;
    std::printf("created %s in %s:\n", args.request.package.c_str(), dir.c_str());
    for (const std::string& f : files) std::printf("  %s\n", f.c_str());
    std::printf("next:\n  cd %s && git init -q && git add . && git commit -qm \"%s 0.1.0\"\n"
                "  kernels build          # build, test, check and pack this machine's CPU target into dist/\n",
                dir.c_str(), args.request.package.c_str());
  });
}

}  // namespace kh::cli
