// rendezvous_files: the key-value files of a Gloo rendezvous on --rendezvous-dir (a directory
// every rank can reach). One file per key, named by the key with every byte outside [A-Za-z0-9.-]
// written %XX (so distinct keys never share a file); a value appears whole, by rename() of a
// temporary file; a claim is an O_EXCL marker file ("claim-" + the escaped name). The files this
// process wrote are remembered, so that once every rank has connected each rank removes its own
// and a finished job leaves the directory as it found it (remove_own_files).
#pragma once
struct stat;
#include <string>
#include <vector>

class RendezvousFiles {
 public:
  // Throws when dir is writable by other users and not sticky, or owned by another user.
  explicit RendezvousFiles(std::string dir);
  ~RendezvousFiles();  // removes the files this process wrote
  RendezvousFiles(const RendezvousFiles&) = delete;
  RendezvousFiles& operator=(const RendezvousFiles&) = delete;
  void set(const std::string& key, const std::vector<char>& value);  // throws naming the file
  bool get(const std::string& key, std::vector<char>* value) const;  // false: not there (yet); throws
                                                                     // for a file of another user
  bool has(const std::string& key) const;
  bool claim(const std::string& name);  // true for the first process only; throws on I/O errors
  void remove_own_files();              // best effort: a file already gone is fine
  const std::vector<std::string>& own_files() const { return own_; }

 private:
  std::string path_of(const std::string& key) const;
  void check_owner(const std::string& file, const struct stat& st) const;
  std::string dir_;
  std::vector<std::string> own_;
};

// The file name a key is stored under (pure; exposed for tests).
std::string rendezvous_file_name(const std::string& key);
