package bci;

import java.io.BufferedOutputStream;
import java.io.DataOutputStream;
import java.io.FileOutputStream;
import java.net.URI;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.stream.Stream;

/**
 * Dumps every class of the running JDK's modules (the jrt:/ file system) into one file, for the
 * class-rewriting round trip of tests/bci.rs. Records, in module and path order:
 * writeUTF(module), writeUTF(internal class name), writeInt(length), the class file bytes.
 *
 * <p>Usage: {@code java bci.DumpJrt <out file>}; the file appears (renamed from a temporary) only
 * when complete.
 */
public class DumpJrt {
    public static void main(String[] args) throws Exception {
        FileSystem fs = FileSystems.getFileSystem(URI.create("jrt:/"));
        Path modules = fs.getPath("/modules");
        List<Path> files = new ArrayList<>();
        try (Stream<Path> s = Files.walk(modules)) {
            s.filter(p -> p.toString().endsWith(".class")).forEach(files::add);
        }
        Collections.sort(files);
        Path out = Paths.get(args[0]);
        Path tmp = Paths.get(args[0] + ".tmp");
        try (DataOutputStream o = new DataOutputStream(new BufferedOutputStream(new FileOutputStream(tmp.toFile()), 1 << 20))) {
            for (Path p : files) {
                String rel = modules.relativize(p).toString();
                int slash = rel.indexOf('/');
                byte[] b = Files.readAllBytes(p);
                o.writeUTF(rel.substring(0, slash));
                o.writeUTF(rel.substring(slash + 1, rel.length() - ".class".length()));
                o.writeInt(b.length);
                o.write(b);
            }
        }
        Files.move(tmp, out, StandardCopyOption.REPLACE_EXISTING);
        System.out.println("dumped " + files.size() + " classes of " + System.getProperty("java.version"));
    }
}
