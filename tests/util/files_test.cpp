// tests/util/files_test.cpp: atomic files and directories leave either the old or the complete
// new contents, never a partial one. Also: the tests find their own source tree (test_util.h).
#include "util/files.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "test_util.h"
#include "util/error.h"

namespace slm {
namespace fs = std::filesystem;

static int count_entries(const std::string& dir) {
  int n = 0;
  for ([[maybe_unused]] auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

TEST(AtomicFile, CommitReplacesAndAbortLeavesOld) {
  test::TempDir tmp;
  std::string p = tmp / "f.txt";
  write_file_atomic(p, "old");
  {
    AtomicFile f(p);
    f.write("new contents");
  }  // not committed
  EXPECT_EQ(read_file(p), "old");
  EXPECT_EQ(count_entries(tmp.path), 1);  // no temp file left behind
  {
    AtomicFile f(p);
    f.write("new contents");
    f.write_at(0, "NEW", 3);
    f.commit();
  }
  EXPECT_EQ(read_file(p), "NEW contents");
}

TEST(AtomicFile, ADeviceOrPipeIsWrittenInPlaceNotReplaced) {
  // `slm plan auto -o /dev/null` renamed a regular file over /dev/null (run as root). A FIFO
  // stands in for the device: it must still be one and its reader must get the bytes.
  test::TempDir dir;
  const std::string fifo = dir / "out";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  write_file_atomic(fifo, "plan");
  char buf[16] = {0};
  const ssize_t n = ::read(reader, buf, sizeof buf);
  ::close(reader);
  EXPECT_EQ(std::string(buf, n > 0 ? static_cast<size_t>(n) : 0), "plan");
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_EQ(count_entries(dir.path), 1);  // no temp file left beside it
}

TEST(AtomicDir, RefusesExistingUnlessOverwriteAndCleansUp) {
  test::TempDir tmp;
  std::string d = tmp / "out";
  {
    AtomicDir a(d, false);
    write_file_atomic(a.dir() + "/x", "1");
  }  // not committed: nothing appears
  EXPECT_FALSE(fs::exists(d));
  EXPECT_EQ(count_entries(tmp.path), 0);
  {
    AtomicDir a(d, false);
    write_file_atomic(a.dir() + "/x", "1");
    a.commit();
  }
  EXPECT_EQ(read_file(d + "/x"), "1");
  EXPECT_THROW(AtomicDir(d, false), UserError);
  {
    AtomicDir a(d, true);
    write_file_atomic(a.dir() + "/y", "2");
    EXPECT_TRUE(fs::exists(d + "/x"));  // the old one stays until commit
    a.commit();
  }
  EXPECT_FALSE(fs::exists(d + "/x"));
  EXPECT_EQ(read_file(d + "/y"), "2");
  EXPECT_EQ(count_entries(tmp.path), 1);
}

TEST(MappedFile, ErrorsNameThePath) {
  try {
    MappedFile m("/nonexistent/file.txt");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/file.txt: cannot open"), std::string::npos);
  }
  test::TempDir tmp;
  test::write(tmp / "empty", "");
  MappedFile m(tmp / "empty");
  EXPECT_EQ(m.size(), 0u);
  EXPECT_THROW({ MappedFile d(tmp.path); }, UserError);  // a directory
}

// The tests that read ../shared skip when it is absent: a wrong source_dir() would skip them silently.
TEST(TestHelpers, SourceDirIsThisSourceTree) {
  EXPECT_TRUE(fs::exists(test::source_dir() / "tests" / "test_util.h")) << test::source_dir();
  EXPECT_TRUE(fs::exists(test::source_dir() / "CMakeLists.txt")) << test::source_dir();
}

}  // namespace slm
