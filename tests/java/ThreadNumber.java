/** Prints the name the JVM gives the program's first unnamed thread ("Thread-0" unless some
 * other thread took the number first). */
public class ThreadNumber {
    public static void main(String[] args) {
        System.out.println("unnamed " + new Thread().getName());
    }
}
