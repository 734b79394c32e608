// powercut_model: see powercut_model.hpp for the rules. The work happens in three passes over
// the records before the cut: the run is replayed as it happened, to learn which inode and
// which folder every record touched (paths resolve only against the names of that moment);
// then every change gets its fate; then the kept changes are replayed onto fresh inodes, and
// what the root folder reaches is written out.
#include "powercut_model.hpp"

#include "helpers/io_log_format.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>
#include <unordered_map>

namespace warren::test::powercut {

namespace fs = std::filesystem;

namespace {

constexpr size_t header_size = 32;
constexpr uint64_t sector = 512;
constexpr size_t none = SIZE_MAX;

// The header io_recorder.c writes in front of every record.
using header = io_log_header;
static_assert(static_cast<int>(op::root) == op_root && static_cast<int>(op::sync) == op_sync);
static_assert(sizeof(header) == header_size);

enum class fate : uint8_t { keep, drop, tear };

// A record, resolved to the model's inodes (indexes into the inode table).
struct step {
  const record* rec = nullptr;
  size_t inode = none;  // written, truncated, synced, created, moved or removed
  size_t parent = none;
  std::string name;
  size_t parent2 = none;  // rename: where to
  std::string name2;
  fate decided = fate::keep;
};

// An inode of the model: a folder's entries or a file's bytes.
struct inode {
  bool dir = false;
  std::string data;
  std::map<std::string, size_t> entries;
};

bool is_entry_change(op kind) {
  return kind == op::create || kind == op::mkdir || kind == op::rename || kind == op::unlink ||
         kind == op::rmdir;
}

// The run as it happened: names resolve to inodes, inode numbers to the inode they name now
// (a number is reused after its file is gone, so a create always starts a new model inode).
class live_replay {
 public:
  std::vector<inode> inodes;

  // Fills `out` for `r`; false when `r` names something the log never created (skipped).
  bool resolve(const record& r, step& out) {
    out.rec = &r;
    switch (r.kind) {
      case op::root:
        return add_inode(r.ino, true, out);
      case op::create:
      case op::mkdir:
        return parent_of(r.path, out.parent, out.name) &&
               add_inode(r.ino, r.kind == op::mkdir, out) && link(out.parent, out.name, out.inode);
      case op::write:
      case op::truncate:
      case op::sync:
        return by_number(r.ino, out.inode);
      case op::rename:
        return entry(r.path, out) && parent_of(r.path2, out.parent2, out.name2) &&
               unlink(out.parent, out.name) && link(out.parent2, out.name2, out.inode);
      case op::unlink:
      case op::rmdir:
        return entry(r.path, out) && unlink(out.parent, out.name);
    }
    return false;
  }

 private:
  std::unordered_map<uint64_t, size_t> by_ino_;

  bool add_inode(uint64_t ino, bool dir, step& out) {
    out.inode = inodes.size();
    inodes.push_back(inode{dir, {}, {}});
    by_ino_[ino] = out.inode;
    return true;
  }

  bool by_number(uint64_t ino, size_t& out) {
    auto i = by_ino_.find(ino);
    if (i == by_ino_.end()) return false;
    out = i->second;
    return true;
  }

  // The folder holding `path` and the last name in it.
  bool parent_of(const std::string& path, size_t& parent, std::string& name) const {
    if (inodes.empty() || path.empty()) return false;
    size_t at = 0;
    size_t start = 0;
    for (auto slash = path.find('/'); slash != std::string::npos; slash = path.find('/', start)) {
      auto i = inodes[at].entries.find(path.substr(start, slash - start));
      if (i == inodes[at].entries.end() || !inodes[i->second].dir) return false;
      at = i->second;
      start = slash + 1;
    }
    parent = at;
    name = path.substr(start);
    return true;
  }

  bool entry(const std::string& path, step& out) {
    if (!parent_of(path, out.parent, out.name)) return false;
    auto i = inodes[out.parent].entries.find(out.name);
    if (i == inodes[out.parent].entries.end()) return false;
    out.inode = i->second;
    return true;
  }

  bool link(size_t parent, const std::string& name, size_t child) {
    inodes[parent].entries[name] = child;
    return true;
  }

  bool unlink(size_t parent, const std::string& name) {
    inodes[parent].entries.erase(name);
    return true;
  }
};

// Whether a sync of `inode` comes after step `at`.
bool synced_after(const std::vector<size_t>& last_sync, size_t inode, size_t at) {
  return inode != none && last_sync[inode] != none && last_sync[inode] > at;
}

// Data changes: kept when synced (or written durably), else dropped, kept or torn.
void decide_data(std::vector<step>& steps, const std::vector<size_t>& last_sync,
                 std::mt19937_64& random, cut_summary& summary) {
  for (size_t i = 0; i < steps.size(); ++i) {
    auto& s = steps[i];
    if (s.rec->kind != op::write && s.rec->kind != op::truncate) continue;
    if (s.rec->durable || synced_after(last_sync, s.inode, i)) continue;
    ++summary.unsynced;
    auto draw = random() % 3;
    s.decided = draw == 0                                  ? fate::drop
                : draw == 1 || s.rec->kind == op::truncate ? fate::keep
                                                           : fate::tear;
  }
}

// Entry changes under the posix rule: each unsynced one is kept or dropped on its own.
void decide_entries_posix(std::vector<step>& steps, const std::vector<size_t>& last_sync,
                          std::mt19937_64& random, cut_summary& summary) {
  for (size_t i = 0; i < steps.size(); ++i) {
    auto& s = steps[i];
    if (!is_entry_change(s.rec->kind)) continue;
    if (synced_after(last_sync, s.parent, i) || synced_after(last_sync, s.parent2, i)) continue;
    ++summary.unsynced;
    if (random() % 2 == 0) s.decided = fate::drop;
  }
}

// Entry changes under the journaled rule: all up to the last sync, then a random prefix.
void decide_entries_journaled(std::vector<step>& steps, std::mt19937_64& random,
                              cut_summary& summary) {
  size_t last = none;
  for (size_t i = 0; i < steps.size(); ++i)
    if (steps[i].rec->kind == op::sync) last = i;
  std::vector<size_t> later;
  for (size_t i = last == none ? 0 : last; i < steps.size(); ++i)
    if (is_entry_change(steps[i].rec->kind)) later.push_back(i);
  summary.unsynced += later.size();
  size_t survive = static_cast<size_t>(random() % (later.size() + 1));
  for (size_t k = survive; k < later.size(); ++k) steps[later[k]].decided = fate::drop;
}

void write_at(std::string& data, uint64_t offset, const char* bytes, size_t size) {
  if (data.size() < offset + size) data.resize(offset + size, '\0');
  std::memcpy(&data[offset], bytes, size);
}

// A torn write: each of its sectors reaches the disk or not, on its own.
void tear(std::string& data, const record& r, std::mt19937_64& random) {
  uint64_t end = r.offset + r.data.size();
  for (uint64_t from = r.offset; from < end;) {
    uint64_t to = std::min(end, (from / sector + 1) * sector);
    if (random() % 2 == 0) write_at(data, from, r.data.data() + (from - r.offset), to - from);
    from = to;
  }
}

// Applies one kept (or torn) change to the durable inodes.
void apply(std::vector<inode>& disk, const step& s, std::mt19937_64& random) {
  auto& target = disk[s.inode];
  switch (s.rec->kind) {
    case op::write:
      if (s.decided == fate::tear)
        tear(target.data, *s.rec, random);
      else
        write_at(target.data, s.rec->offset, s.rec->data.data(), s.rec->data.size());
      break;
    case op::truncate:
      target.data.resize(s.rec->offset, '\0');
      break;
    case op::create:
    case op::mkdir:
      disk[s.parent].entries[s.name] = s.inode;
      break;
    case op::rename:
      if (auto i = disk[s.parent].entries.find(s.name);
          i != disk[s.parent].entries.end() && i->second == s.inode)
        disk[s.parent].entries.erase(i);
      disk[s.parent2].entries[s.name2] = s.inode;
      break;
    case op::unlink:
    case op::rmdir:
      if (auto i = disk[s.parent].entries.find(s.name);
          i != disk[s.parent].entries.end() && i->second == s.inode)
        disk[s.parent].entries.erase(i);
      break;
    case op::root:
    case op::sync:
      break;
  }
}

// Writes what the root folder reaches. Iterative: the depth is the recorded node's to choose;
// a folder reached twice (dropped renames can make a loop) is written once.
void materialize(const std::vector<inode>& disk, const std::string& out_dir) {
  if (disk.empty()) return;
  std::vector<std::pair<size_t, fs::path>> todo{{0, fs::path(out_dir)}};
  std::vector<bool> seen(disk.size(), false);
  seen[0] = true;
  while (!todo.empty()) {
    auto [dir, path] = todo.back();
    todo.pop_back();
    for (const auto& [name, child] : disk[dir].entries) {
      auto where = path / name;
      if (!disk[child].dir) {
        std::ofstream out(where, std::ios::binary);
        out.write(disk[child].data.data(), static_cast<std::streamsize>(disk[child].data.size()));
        if (!out) throw std::runtime_error("cannot write " + where.string());
      } else if (!seen[child]) {
        seen[child] = true;
        fs::create_directory(where);
        todo.emplace_back(child, where);
      }
    }
  }
}

record parse_record(const std::string& bytes, size_t at, const header& h) {
  record r;
  r.kind = static_cast<op>(h.op);
  r.durable = (h.flags & io_log_durable_write) != 0;
  r.ino = h.ino;
  r.offset = h.offset;
  size_t p = at + header_size;
  r.path = bytes.substr(p, h.path_len);
  r.path2 = bytes.substr(p + h.path_len, h.path2_len);
  size_t data = p + h.path_len + h.path2_len;
  r.data = bytes.substr(data, at + h.size - data);
  r.end = at + h.size;
  return r;
}

}  // namespace

std::vector<record> read_log(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + file);
  std::string bytes(std::istreambuf_iterator<char>(in), {});
  std::vector<record> out;
  for (size_t at = 0; at + header_size <= bytes.size();) {
    header h{};
    std::memcpy(&h, bytes.data() + at, header_size);
    if (h.op < static_cast<uint8_t>(op::root) || h.op > static_cast<uint8_t>(op::sync) ||
        h.size < header_size + uint64_t{h.path_len} + h.path2_len)
      throw std::runtime_error(file + ": malformed record at " + std::to_string(at));
    if (at + h.size > bytes.size()) break;  // torn last record
    out.push_back(parse_record(bytes, at, h));
    at += h.size;
  }
  if (out.empty() || out.front().kind != op::root)
    throw std::runtime_error(file + " does not start with the recorded folder's inode");
  return out;
}

cut_summary build_state(const std::vector<record>& log, uint64_t cut, std::mt19937_64& random,
                        const std::string& out_dir, const cut_options& options) {
  cut_summary summary;
  live_replay live;
  std::vector<step> steps;
  for (size_t i = 0; i < log.size() && log[i].end <= cut; ++i) {
    ++summary.records;
    step s;
    if (live.resolve(log[i], s))
      steps.push_back(std::move(s));
    else
      ++summary.unresolved;
    if (options.sabotage == i && !steps.empty() && steps.back().rec == &log[i])
      steps.back().decided = fate::drop;
  }
  std::vector<size_t> last_sync(live.inodes.size(), none);
  for (size_t i = 0; i < steps.size(); ++i)
    if (steps[i].rec->kind == op::sync) last_sync[steps[i].inode] = i;
  decide_data(steps, last_sync, random, summary);
  if (options.entries == entry_rule::posix)
    decide_entries_posix(steps, last_sync, random, summary);
  else
    decide_entries_journaled(steps, random, summary);
  std::vector<inode> disk(live.inodes.size());
  for (size_t i = 0; i < disk.size(); ++i) disk[i].dir = live.inodes[i].dir;
  for (const auto& s : steps) {
    if (s.decided == fate::drop) {
      ++summary.dropped;
      continue;
    }
    summary.torn += s.decided == fate::tear ? 1 : 0;
    apply(disk, s, random);
  }
  materialize(disk, out_dir);
  return summary;
}

}  // namespace warren::test::powercut
