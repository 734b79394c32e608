// warren-node --check: the metadata and queue folder checks of a locked data dir, their findings
// printed, and with --repair the damaged queue files moved aside. See data_check.hpp.
#include "apps/data_check.hpp"

#include "persistence/data_dir.hpp"
#include "persistence/folder_check.hpp"
#include "persistence/lmdb_store.hpp"

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>
#include <set>
#include <stdexcept>
#include <vector>

namespace warren::node {

namespace {

namespace fs = std::filesystem;
using persistence::folder_finding;
using persistence::lmdb_store;

constexpr const char* metadata_advice =
    "--repair does not repair metadata: restore DATA_DIR/meta from a backup, or rebuild the "
    "broker from a definitions export (warrenctl import-definitions) on a new data dir";

// What the metadata check found.
struct metadata_verdict {
  bool damaged = false;   // the node refuses to start on it
  bool checkable = true;  // the queue folders are of a format this build checks
  bool complete = false;  // every record was read: `live` names every queue's folder
  std::set<uint64_t> live;
};

bool looks_like_data_dir(const std::string& path, std::ostream& out) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    out << "cannot check: " << path << " is not a directory\n";
    return false;
  }
  if (!fs::exists(path + "/meta", ec) && !fs::exists(path + "/queues", ec)) {
    out << "cannot check: " << path << " is not a warren data dir (no meta/ or queues/ in it)\n";
    return false;
  }
  return true;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

void refused(const std::string& file, const std::string& why, std::ostream& out) {
  out << "DAMAGED " << file << ": " << why << ": the node refuses to start on it. "
      << metadata_advice << "\n";
}

// No data.mdb, or an empty one: a new data dir, unless queue folders are waiting for it.
metadata_verdict no_metadata(const persistence::data_dir& dir, const std::string& file,
                             std::ostream& out) {
  metadata_verdict v;
  if (auto folders = dir.queue_folder_count(); folders != 0) {
    refused(file, "missing or empty, while queues/ holds " + std::to_string(folders) + " folder(s)",
            out);
    v.damaged = true;
    return v;
  }
  out << "OK metadata: none yet (" << file << " missing or empty): the node starts as a new "
      << "broker\n";
  v.complete = true;
  return v;
}

metadata_verdict read_metadata(lmdb_store& store, const persistence::data_dir& dir,
                               const std::string& file, std::ostream& out) {
  metadata_verdict v;
  auto version = store.found_version();
  if (version > lmdb_store::format_version || version < 1) {
    out << "cannot check: " << file << " has format version " << version
        << "; this warren-node reads versions 1 to " << lmdb_store::format_version << "\n";
    v.checkable = false;
    return v;
  }
  std::vector<std::string> damaged;
  auto contents = store.load(&damaged);
  for (const auto& d : damaged) refused(file, "metadata record damaged: " + d, out);
  v.damaged = !damaged.empty();
  if (contents.fresh && dir.queue_folder_count() != 0) {
    refused(file,
            "nothing to start from (no format version, or not a single record), while queues/ "
            "holds folders",
            out);
    v.damaged = true;
  }
  if (!v.damaged) {
    out << "OK metadata " << file << ": format " << version << ", tables " << joined(store.tables())
        << "; " << contents.queues.size() << " queue record(s), none damaged\n";
    v.complete = true;
    for (const auto& q : contents.queues) v.live.insert(q.id);
  }
  if (version == 1) {
    out << "cannot check the queue folders: they are of format 1, which the node upgrades on its "
        << "next start; start it once, then check\n";
    v.checkable = false;
  }
  return v;
}

metadata_verdict check_metadata(const persistence::data_dir& dir, std::ostream& out) {
  auto file = dir.meta_path() + "/data.mdb";
  std::error_code ec;
  auto size = fs::file_size(file, ec);
  if (ec == std::errc::no_such_file_or_directory || (!ec && size == 0))
    return no_metadata(dir, file, out);
  try {
    lmdb_store store(dir.meta_path(), lmdb_store::read_only);
    return read_metadata(store, dir, file, out);
  } catch (const std::exception& e) {
    refused(file, e.what(), out);
    metadata_verdict v;
    v.damaged = true;
    return v;
  }
}

void print_finding(const folder_finding& f, bool repair, std::ostream& out) {
  out << (f.loses_data ? "DAMAGED " : "NOTE ") << f.path << ": " << f.problem << ": " << f.cost;
  if (!repair && !f.move_aside.empty())
    out << " [--repair would move it aside: " << f.if_moved << "]";
  out << "\n";
}

// Moves damaged queue files to DATA_DIR/damaged/<time>/, under the path they had in the data
// dir. Every folder it makes is synced in its parent, and after each rename the folder moved to,
// then the one moved from, so that a crash leaves the file under one name or both, never none.
class aside_mover {
 public:
  explicit aside_mover(std::string data_dir) : data_dir_(std::move(data_dir)) {}

  /// The new path of `file`; throws std::runtime_error when it cannot be moved.
  std::string move(const std::string& file) {
    // "queues/<id>/<file>": the file's place in the data dir, kept under the new root
    auto relative = fs::path(file).lexically_normal().lexically_relative(data_dir_);
    auto to = fs::path(root()) / relative;
    make_dirs(to.parent_path());
    std::error_code ec;
    if (fs::exists(to, ec)) throw std::runtime_error(to.string() + " exists already");
    fs::rename(file, to, ec);
    if (ec) throw std::runtime_error(ec.message());
    persistence::sync_directory(to.parent_path().string());
    persistence::sync_directory(fs::path(file).parent_path().string());
    return to.string();
  }

  const std::string& used_root() const { return root_; }

 private:
  // DATA_DIR/damaged/YYYYMMDDTHHMMSSZ, with a suffix when an earlier repair took that name.
  std::string root() {
    if (!root_.empty()) return root_;
    std::time_t now = std::time(nullptr);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", std::gmtime(&now));
    auto base = data_dir_ + "/damaged/" + stamp;
    std::error_code ec;
    root_ = base;
    for (int n = 2; fs::exists(root_, ec); ++n) root_ = base + "-" + std::to_string(n);
    return root_;
  }

  void make_dirs(const fs::path& dir) {
    std::error_code ec;
    if (fs::is_directory(dir, ec)) return;
    make_dirs(dir.parent_path());
    if (!fs::create_directory(dir, ec) && ec)
      throw std::runtime_error("cannot create " + dir.string() + ": " + ec.message());
    persistence::sync_directory(dir.parent_path().string());
  }

  std::string data_dir_;
  std::string root_;
};

// Moves aside what the findings name; returns how many damaged findings remain unsettled.
size_t move_damaged_aside(const std::string& data_dir, const std::vector<folder_finding>& findings,
                          std::ostream& out) {
  aside_mover mover(data_dir);
  std::set<std::string> moved, failed;
  for (const auto& f : findings)
    for (const auto& file : f.move_aside) {
      if (moved.count(file) || failed.count(file)) continue;
      try {
        out << "MOVED " << file << " -> " << mover.move(file) << "\n";
        moved.insert(file);
      } catch (const std::exception& e) {
        out << "FAILED to move " << file << " aside: " << e.what() << "\n";
        failed.insert(file);
      }
    }
  size_t unsettled = 0;
  for (const auto& f : findings) {
    bool settled = !f.move_aside.empty() && moved.count(f.move_aside.front()) != 0;
    unsettled += f.loses_data && !settled;
  }
  if (!moved.empty())
    out << "moved " << moved.size() << " file(s) aside into " << mover.used_root()
        << " (nothing was deleted)\n";
  return unsettled;
}

void print_summary(const persistence::folder_check_result& folders, bool metadata_damaged,
                   const std::string& path, bool repair, std::ostream& out) {
  size_t damaged = 0, movable = 0;
  for (const auto& f : folders.findings) {
    damaged += f.loses_data;
    movable += f.loses_data && !f.move_aside.empty();
  }
  out << (damaged == 0 ? "OK queues: " : "queues: ") << folders.folders << " folder(s), "
      << folders.files << " file(s) read; " << damaged << " damaged, "
      << folders.findings.size() - damaged << " noted (handled by start-up without loss)\n";
  if (!repair && movable != 0)
    out << "warren-node --check --repair --data-dir " << path << " moves the damaged queue files "
        << "aside into " << path << "/damaged/ (nothing is deleted)\n";
  if (metadata_damaged) out << "the metadata is damaged: " << metadata_advice << "\n";
}

}  // namespace

int check_data_dir(const std::string& given, bool repair, std::ostream& out) {
  // "d/" and "d" name the same dir, and its files are named from it in what is printed
  auto normal = fs::path(given).lexically_normal();
  if (!normal.has_filename() && normal.has_relative_path()) normal = normal.parent_path();
  auto path = normal.string();
  if (!looks_like_data_dir(path, out)) return 2;
  std::unique_ptr<persistence::data_dir> dir;
  try {
    dir = std::make_unique<persistence::data_dir>(path);  // the lock a node takes
  } catch (const std::exception& e) {
    out << "cannot check: " << e.what() << "\n";
    return 2;
  }
  out << "checking data dir " << path << (repair ? " (--repair)" : " (read-only)") << "\n";
  auto meta = check_metadata(*dir, out);
  if (!meta.checkable) return meta.damaged ? 1 : 2;
  auto folders = persistence::check_queue_folders(dir->path() + "/queues",
                                                  meta.complete ? &meta.live : nullptr);
  size_t unsettled = 0;
  for (const auto& f : folders.findings) {
    print_finding(f, repair, out);
    unsettled += f.loses_data;
  }
  print_summary(folders, meta.damaged, path, repair, out);
  if (repair) unsettled = move_damaged_aside(path, folders.findings, out);
  bool sound = !meta.damaged && unsettled == 0;
  if (sound)
    out << "result: nothing " << (repair ? "left" : "found")
        << " that loses data or stops the node\n";
  else
    out << "result: damage " << (repair ? "remains" : "found") << "\n";
  return sound ? 0 : 1;
}

}  // namespace warren::node
