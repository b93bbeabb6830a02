// CLASS_LOAD_HOOK: an app class patched by the agent; a bootstrap class passed through a copy.
public class Hook {
    public static void main(String[] args) {
        System.out.println("message=" + HookTarget.message());
        java.util.zip.Adler32 a = new java.util.zip.Adler32();
        a.update(new byte[] {1, 2, 3});
        System.out.println("adler=" + a.getValue());
    }
}
